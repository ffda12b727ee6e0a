import Foundation
import Testing
import WorkerTestSupport

/// The manifest made from where the truth lives (issue 60), through the binary against moto's S3
/// server with signatures on: `worker manifest s3://BUCKET/PREFIX/`, five changes asked about
/// alone, the served tree following, and failover said aloud for a wrong key and a dead bucket.
@Suite(.hangLimit) struct BucketManifestTests {
    private static func avatar(_ number: Int, _ version: Int = 1) -> [UInt8] {
        Array("avatar \(number) version \(version)\n".utf8)
    }

    private func read(_ path: String) -> String? { try? String(contentsOfFile: path, encoding: .utf8) }

    private func json(_ path: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
    }

    /// Entry URL → hash of a manifest written by `worker manifest`.
    private func pins(_ path: String) -> [String: String] {
        let lines = (read(path) ?? "").split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        var pins: [String: String] = [:]
        for (offset, line) in lines.enumerated() where line.hasPrefix("- url: ") && offset + 1 < lines.count {
            let url = String(line.dropFirst("- url: ".count)).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            pins[url] = String(lines[offset + 1].dropFirst("hash: sha256:".count))
        }
        return pins
    }

    /// A manifest with a CDN copy as the mirror of every entry (the manifest worker wrote, plus
    /// the mirrors map a user adds).
    private func withMirror(_ manifest: String, cdn: String, in directory: TemporaryDirectory) -> String {
        let text = (read(manifest) ?? "").replacingOccurrences(
            of: "base_url: \"s3://assets/avatars/\"\n",
            with: "base_url: \"s3://assets/avatars/\"\nmirrors:\n  \"s3://assets/avatars/\": [\"\(cdn)\"]\n")
        return directory.write("served.yaml", text)
    }

    @Test func aBucketBecomesAManifestAServedTreeFollowsItsChangesAndFailoverIsSaidAloud() async throws {
        var objects: [String: [UInt8]] = [:]
        for number in 0..<12 { objects["avatars/\(number).png"] = Self.avatar(number) }
        objects["avatars/people/two words+plus.png"] = Array("spaces and a plus\n".utf8)
        objects["other/not-listed.png"] = Array("outside the prefix\n".utf8)
        let checksummed = Set((0..<6).map { "avatars/\($0).png" })
        let moto = try MotoS3(objects: ["assets": objects], sha256Keys: checksummed)
        defer { moto.stop() }
        let cdn = try await TestOrigin.start()
        defer { Task { await cdn.stop() } }
        // The CDN copy at the paths that spell the keys (a space and a plus percent-encoded).
        func copyToCDN(_ key: String, _ bytes: [UInt8]) {
            cdn.set("/cdn/" + key.replacingOccurrences(of: " ", with: "%20").replacingOccurrences(of: "+", with: "%2B"), bytes)
        }
        for (key, bytes) in objects { copyToCDN(key, bytes) }
        let directory = TemporaryDirectory()
        let environment = moto.environment(moto.user, home: directory.path)
        let manifest = directory.path + "/avatars.yaml"
        let makeCache = directory.path + "/make-cache"

        // The bucket to a manifest: six pinned by the bucket's SHA-256 (a HEAD each), seven hashed
        // from one download each, one listing.
        let before = moto.requests.count
        let made = try await WorkerBinary.run(
            [
                "manifest", "s3://assets/avatars/", "-o", manifest, "--cache-dir", makeCache,
                "--progress", "never",
            ], environment: environment)
        #expect(made.code == 0, "\(made.stderr)")
        #expect(
            made.stderr.contains(
                "13 objects under s3://assets/avatars/: 0 unchanged since the last run, 6 pinned by the bucket's SHA-256, 7 downloaded and hashed"
            ),
            "\(made.stderr)")
        #expect(read(manifest)?.contains("base_url: \"s3://assets/avatars/\"") == true)
        let first = pins(manifest)
        #expect(
            first.count == 13 && first["people/two words+plus.png"] == sha256(objects["avatars/people/two words+plus.png"]!),
            "keys relative to the prefix, as written: \(first.keys.sorted())")
        #expect(first["3.png"] == sha256(Self.avatar(3)) && first["9.png"] == sha256(Self.avatar(9)))
        let asked = moto.requests.dropFirst(before)
        #expect(
            asked.filter { $0.hasPrefix("HEAD ") }.count == 6 && asked.filter { $0.hasPrefix("GET /assets/avatars/") }.count == 7,
            "\(Array(asked))")

        // Served from a tree; a CDN copy is each entry's mirror.
        let site = directory.path + "/www/avatars"
        let cache = directory.path + "/cache"
        let served = try await WorkerBinary.run(
            [
                "sync", withMirror(manifest, cdn: cdn.url("/cdn/avatars/"), in: directory),
                "--cache-dir", cache, "--tree", site, "--tree-complete", "-q",
            ], environment: environment)
        #expect(served.code == 0, "\(served.stderr)")
        #expect(read(site + "/people/two words+plus.png") == "spaces and a plus\n")
        #expect(cdn.totalRequests == 0, "the bucket served everything")

        // Five changes: three modified (one keeping its size), one deleted, one added.
        try moto.put("assets", "avatars/0.png", Self.avatar(0, 2), sha256: true)
        try moto.put("assets", "avatars/7.png", Self.avatar(7, 2), sha256: false)
        try moto.put("assets", "avatars/8.png", Array("a longer eighth avatar, version 2\n".utf8), sha256: false)
        try moto.delete("assets", "avatars/11.png")
        try moto.put("assets", "avatars/new.png", Array("a new avatar\n".utf8), sha256: true)
        #expect(Self.avatar(7, 2).count == Self.avatar(7).count)
        copyToCDN("avatars/0.png", Self.avatar(0, 2))
        copyToCDN("avatars/7.png", Self.avatar(7, 2))
        copyToCDN("avatars/8.png", Array("a longer eighth avatar, version 2\n".utf8))
        copyToCDN("avatars/new.png", Array("a new avatar\n".utf8))
        let again = moto.requests.count
        let updated = try await WorkerBinary.run(
            [
                "manifest", "s3://assets/avatars/", "-o", manifest, "--cache-dir", makeCache,
                "--progress", "never",
            ], environment: environment)
        #expect(updated.code == 0, "\(updated.stderr)")
        #expect(
            updated.stderr.contains(
                "13 objects under s3://assets/avatars/: 9 unchanged since the last run, 2 pinned by the bucket's SHA-256, 2 downloaded and hashed"
            ),
            "\(updated.stderr)")
        let secondAsked = Array(moto.requests.dropFirst(again))
        #expect(secondAsked.count == 5, "one listing and the four changed or new objects: \(secondAsked)")
        let second = pins(manifest)
        #expect(second["0.png"] == sha256(Self.avatar(0, 2)) && second["7.png"] == sha256(Self.avatar(7, 2)))
        #expect(second["new.png"] == sha256(Array("a new avatar\n".utf8)) && second["11.png"] == nil)
        #expect(second["5.png"] == first["5.png"])

        // The tree follows: exactly the changed files fetched, the same-size change caught.
        let report = directory.path + "/r.json"
        let resynced = try await WorkerBinary.run(
            [
                "sync", withMirror(manifest, cdn: cdn.url("/cdn/avatars/"), in: directory),
                "--cache-dir", cache, "--tree", site, "--report", report, "--prune", "-q",
            ],
            environment: environment)
        #expect(resynced.code == 0, "\(resynced.stderr)")
        let totals = try #require(try json(report)["totals"] as? [String: Int])
        #expect(totals["updated"] == 3 && totals["added"] == 1 && totals["unchanged"] == 9, "\(totals)")
        #expect(read(site + "/7.png") == "avatar 7 version 2\n" && read(site + "/new.png") == "a new avatar\n")
        #expect(read(site + "/11.png") == nil)

        // A wrong secret: every entry refused, the CDN serves, and the run says so.
        let wrong = moto.environment(
            MotoS3.Keys(id: moto.user.id, secret: "wrong" + String(moto.user.secret.dropFirst(5))),
            home: directory.path)
        let failoverReport = directory.path + "/failover.json"
        let refused = try await WorkerBinary.run(
            [
                "sync", withMirror(manifest, cdn: cdn.url("/cdn/avatars/"), in: directory),
                "--cache-dir", directory.path + "/wrong-key", "--report", failoverReport,
                "--retries", "0", "-q",
            ], environment: wrong)
        #expect(refused.code == 0, "\(refused.stderr)")
        #expect(
            refused.stderr.contains("warning: failover: 13 entries from \(cdn.url("")): s3://assets answered HTTP 403")
                && refused.stderr.contains("signed with access key \(moto.user.id)"), "\(refused.stderr)")
        #expect(!refused.stderr.contains(moto.user.secret.dropFirst(5)))
        let failover = try #require(try json(failoverReport)["failover"] as? [[String: Any]])
        #expect(failover.count == 1 && failover[0]["entries"] as? Int == 13 && failover[0]["http_status"] as? Int == 403, "\(failover)")
        let strict = try await WorkerBinary.run(
            [
                "sync", withMirror(manifest, cdn: cdn.url("/cdn/avatars/"), in: directory),
                "--cache-dir", directory.path + "/strict", "--retries", "0", "-q", "--fail-on-failover",
            ],
            environment: wrong)
        #expect(strict.code == 1, "--fail-on-failover: \(strict.code) \(strict.stderr)")

        // The bucket down: the same, with the reason.
        let refusing = RefusingPort()
        defer { refusing.release() }
        var dead = environment
        dead["AWS_ENDPOINT_URL"] = refusing.origin
        let down = try await WorkerBinary.run(
            [
                "sync", withMirror(manifest, cdn: cdn.url("/cdn/avatars/"), in: directory),
                "--cache-dir", directory.path + "/dead", "--retries", "0", "-q",
            ], environment: dead)
        #expect(down.code == 0, "\(down.stderr)")
        #expect(down.stderr.contains("entries from \(cdn.url("")): s3://assets failed: connection refused"), "\(down.stderr)")
    }

    /// An object rewritten with the same size within the same second: its listing differs from the
    /// last run's in the ETag alone. It is asked about again and pinned by its new bytes (moto
    /// cannot show this: it dates every write anew). The bucket is a stub on loopback that lists
    /// what the test says.
    @Test func aListingWhoseOnlyChangeIsTheETagIsPinnedAgain() async throws {
        let bucket = try await TestOrigin.start()
        defer { Task { await bucket.stop() } }
        func publish(_ bytes: String) {
            bucket.set("/assets/avatars/a.png", bytes)
            bucket.set(
                "/assets/",
                """
                <?xml version="1.0" encoding="UTF-8"?>
                <ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>assets</Name>\
                <Prefix>avatars/</Prefix><KeyCount>1</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>\
                <Contents><Key>avatars/a.png</Key><LastModified>2026-12-01T10:00:00.000Z</LastModified>\
                <ETag>\(TestOrigin.etag(Array(bytes.utf8)).replacingOccurrences(of: "\"", with: "&quot;"))</ETag>\
                <Size>\(bytes.utf8.count)</Size><StorageClass>STANDARD</StorageClass></Contents></ListBucketResult>
                """)
        }
        let directory = TemporaryDirectory()
        let environment = MotoS3.environment(
            endpoint: bucket.url(""), MotoS3.Keys(id: "AKIDEXAMPLE", secret: "secret"),
            home: directory.path)
        let manifest = directory.path + "/avatars.yaml"
        let arguments = [
            "manifest", "s3://assets/avatars/", "-o", manifest, "--cache-dir", directory.path + "/cache", "--progress", "never",
        ]
        publish("version 1\n")
        let first = try await WorkerBinary.run(arguments, environment: environment)
        #expect(first.code == 0, "\(first.stderr)")
        #expect(pins(manifest)["a.png"] == sha256(Array("version 1\n".utf8)), "\(read(manifest) ?? "")")
        // Unchanged: the pin is kept without a download.
        let downloads = bucket.hits("/assets/avatars/a.png")
        let again = try await WorkerBinary.run(arguments, environment: environment)
        #expect(again.code == 0 && again.stderr.contains("1 unchanged since the last run"), "\(again.stderr)")
        #expect(bucket.hits("/assets/avatars/a.png") == downloads)
        // The same size and date, other bytes: only the ETag says so.
        publish("version 2\n")
        let changed = try await WorkerBinary.run(arguments, environment: environment)
        #expect(changed.code == 0, "\(changed.stderr)")
        #expect(changed.stderr.contains("0 unchanged since the last run"), "\(changed.stderr)")
        #expect(pins(manifest)["a.png"] == sha256(Array("version 2\n".utf8)), "the old pin kept: \(read(manifest) ?? "")")
        #expect(bucket.hits("/assets/avatars/a.png") > downloads, "the changed object was not downloaded again")
    }

    /// A bucket that cannot be listed writes no manifest: the earlier one stays (exit 1, why said).
    @Test func aBucketThatCannotBeListedLeavesTheEarlierManifest() async throws {
        let directory = TemporaryDirectory()
        let refusing = RefusingPort()
        defer { refusing.release() }
        let earlier = directory.write(
            "m.yaml", "# Written by worker manifest 0.5.0; hashes are SHA-256 of the content.\nversion: 1\nentries: []\n")
        let result = try await WorkerBinary.run(
            [
                "manifest", "s3://assets/avatars", "-o", earlier, "--cache-dir", directory.path + "/c",
                "--retries", "0",
            ],
            environment: [
                "AWS_ENDPOINT_URL": refusing.origin, "AWS_ACCESS_KEY_ID": "", "AWS_PROFILE": "",
                "HOME": directory.path, "AWS_CONFIG_FILE": "", "AWS_SHARED_CREDENTIALS_FILE": "",
            ])
        #expect(result.code == 1 && result.stderr.contains("cannot list s3://assets/avatars/: connection refused"), "\(result.stderr)")
        #expect((try? String(contentsOfFile: earlier, encoding: .utf8))?.contains("entries: []") == true)
    }

    /// `--base-url s3://…` works for folders too: keys are written as they are (S3 keys are literal).
    @Test func aFolderPublishedToABucketGetsLiteralKeys() async throws {
        let directory = TemporaryDirectory()
        directory.write("public/a b+c.txt", "x\n")
        let result = try await WorkerBinary.run(["manifest", directory.path + "/public", "--base-url", "s3://assets/up/"])
        #expect(result.code == 0, "\(result.stderr)")
        #expect(
            result.stdout.contains("base_url: \"s3://assets/up/\"") && result.stdout.contains("- url: \"a b+c.txt\""), "\(result.stdout)")
    }
}

/// `manifest --urls` never pins a stale version, and its options say what is wrong with them.
@Suite(.hangLimit) struct ManifestPinTests {
    @Test func aCachedVersionIsAskedForAgainBeforeItIsPinned() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        harness.serve("a.png", "first\n")
        let list = harness.directory.write("urls.txt", harness.origin.url("/f/a.png") + "\n")
        let manifest = harness.directory.path + "/pinned.yaml"
        let first = try await WorkerBinary.run(["manifest", "--urls", list, "-o", manifest, "--cache-dir", harness.cache])
        #expect(first.code == 0, "\(first.stderr)")
        #expect((try? String(contentsOfFile: manifest, encoding: .utf8))?.contains(sha256(Array("first\n".utf8))) == true)
        // Changed at the origin: 3038a51 pinned the cached first version again.
        harness.serve("a.png", "second\n")
        let second = try await WorkerBinary.run(["manifest", "--urls", list, "-o", manifest, "--cache-dir", harness.cache])
        #expect(second.code == 0, "\(second.stderr)")
        let text = try String(contentsOfFile: manifest, encoding: .utf8)
        #expect(text.contains(sha256(Array("second\n".utf8))) && !text.contains(sha256(Array("first\n".utf8))), "\(text)")
        // --offline pins what the cache has, and says so.
        harness.serve("a.png", "third\n")
        let requests = harness.origin.totalRequests
        let offline = try await WorkerBinary.run(["manifest", "--urls", list, "--offline", "--cache-dir", harness.cache])
        #expect(offline.code == 0 && offline.stdout.contains(sha256(Array("second\n".utf8))), "\(offline.stdout) \(offline.stderr)")
        #expect(offline.stderr.contains("--offline: pinned what the cache holds"), "\(offline.stderr)")
        #expect(harness.origin.totalRequests == requests, "no request offline")
    }

    @Test func anUnknownOptionIsReportedAsSuch() async throws {
        let directory = TemporaryDirectory()
        let list = directory.write("urls.txt", "")
        let typo = try await WorkerBinary.run(["manifest", "--urls", list, "--progresss", "never"])
        #expect(typo.code == 2 && typo.stderr.contains("Unknown option '--progresss'"), "\(typo.stderr)")
        let known = try await WorkerBinary.run(["manifest", "--urls", list, "--progress", "never", "--cache-dir", directory.path + "/c"])
        #expect(known.code == 0, "\(known.stderr)")
    }
}
