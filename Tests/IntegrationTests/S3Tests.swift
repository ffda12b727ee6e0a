import Foundation
import Testing
import WorkerTestSupport

/// `s3://` entries through the built binary against moto's S3 server, which checks every
/// request's signature: good keys, a wrong secret, a session token (and one the server does not
/// accept), a missing object, a large object resumed with a signed `Range`, profiles in the
/// shared files; the manifest's and the environment's mistakes.
@Suite(.hangLimit) struct S3Tests {
    private static let objects: [String: [UInt8]] = [
        "avatars/1.png": Array("first avatar\n".utf8),
        "avatars/2 two+plus.png": Array("second avatar\n".utf8),
        "avatars/3.png": Array("third avatar\n".utf8),
    ]

    private func rows(_ path: String) throws -> [[String: Any]] {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        return try #require(object["entries"] as? [[String: Any]])
    }

    private func manifest(_ directory: TemporaryDirectory, missing: Bool = false, name: String = "m.yaml") -> String {
        var text = "version: 1\nbase_url: s3://assets/avatars/\nentries:\n"
        for (key, bytes) in Self.objects.sorted(by: { $0.key < $1.key }) {
            text += "  - url: \"\(key.dropFirst("avatars/".count))\"\n    hash: sha256:\(sha256(bytes))\n"
        }
        if missing { text += "  - url: s3://assets/avatars/missing.png\n" }
        return directory.write(name, text)
    }

    @Test func goodKeysFetchEveryObjectAndAWrongSecretIsRefusedNamingTheKeyAndRegionOnly() async throws {
        let moto = try MotoS3(objects: ["assets": Self.objects])
        defer { moto.stop() }
        let directory = TemporaryDirectory()
        let path = manifest(directory, missing: true)
        let cache = directory.path + "/cache"
        // First, so that a setup that left moto unauthenticated shows: a wrong secret must fail.
        let wrongSecret = "wrong" + String(moto.user.secret.dropFirst(5))
        let wrongReport = directory.path + "/wrong.json"
        let wrong = try await WorkerBinary.run(
            ["sync", path, "--cache-dir", cache, "--report", wrongReport, "--retries", "0"],
            environment: moto.environment(
                MotoS3.Keys(id: moto.user.id, secret: wrongSecret),
                home: directory.path, extra: ["AWS_REGION": "eu-west-3"]))
        #expect(wrong.code == 1, "\(wrong.code) \(wrong.stderr)")
        let refused = try rows(wrongReport)
        #expect(refused.count == 4 && refused.allSatisfy { $0["status"] as? String == "failed" && $0["http_status"] as? Int == 403 })
        let message = try #require(refused.first?["error"] as? String)
        #expect(message.contains(moto.user.id) && message.contains("eu-west-3"), "\(message)")
        let written = try String(contentsOfFile: wrongReport, encoding: .utf8) + wrong.stdout + wrong.stderr
        #expect(!written.contains(wrongSecret), "the secret was printed")

        let reportPath = directory.path + "/r.json"
        let good = try await WorkerBinary.run(
            ["sync", path, "--cache-dir", cache, "--report", reportPath, "--retries", "0"],
            environment: moto.environment(moto.user, home: directory.path))
        #expect(good.code == 1, "only the missing object fails: \(good.code) \(good.stderr)")
        let entries = try rows(reportPath)
        for (key, bytes) in Self.objects {
            let row = try #require(entries.first { $0["url"] as? String == "s3://assets/" + key }, "\(entries)")
            #expect(row["status"] as? String == "added")
            let stored = try Data(contentsOf: URL(fileURLWithPath: try #require(row["path"] as? String)))
            #expect(Array(stored) == bytes)
        }
        let missing = try #require(entries.first { $0["url"] as? String == "s3://assets/avatars/missing.png" })
        #expect(missing["http_status"] as? Int == 404, "\(missing)")
        // Every request moto answered was signed and checked; none of the secret reached the cache.
        #expect(moto.requests.contains { $0.hasPrefix("GET /assets/avatars/1.png 200") }, "\(moto.requests)")
        for file in ["index.sqlite", "index.sqlite-wal"] {
            let bytes = FileManager.default.contents(atPath: cache + "/" + file) ?? Data()
            #expect(bytes.range(of: Data(moto.user.secret.utf8)) == nil, "the secret is in \(file)")
        }
        // The cache answers by the s3:// URL.
        let located = try await WorkerBinary.run(["path", "--cache-dir", cache, "s3://assets/avatars/3.png"])
        #expect(located.code == 0 && located.stdout.contains("/objects/sha256/"), "\(located.stdout) \(located.stderr)")
        let removed = try await WorkerBinary.run(["rm", "--cache-dir", cache, "s3://assets/avatars/3.png"])
        #expect(removed.code == 0, "\(removed.stderr)")
        // `get` and `manifest --urls` take s3:// URLs.
        let fetched = try await WorkerBinary.run(
            ["get", "--cache-dir", cache, "s3://assets/avatars/3.png"],
            environment: moto.environment(moto.user, home: directory.path))
        #expect(fetched.code == 0, "\(fetched.stderr)")
        let pinned = try await WorkerBinary.run(
            [
                "manifest", "--urls", directory.write("urls.txt", "s3://assets/avatars/1.png\n"),
                "--cache-dir", cache,
            ], environment: moto.environment(moto.user, home: directory.path))
        #expect(
            pinned.code == 0 && pinned.stdout.contains("s3://assets/avatars/1.png")
                && pinned.stdout.contains(sha256(Self.objects["avatars/1.png"]!)), "\(pinned.stdout) \(pinned.stderr)")
        // `verify --repair` fetches a lost object again, signed (a pinned row: a row without a
        // hash, as `get` without --hash leaves, is dropped instead).
        let first = try await WorkerBinary.run(["path", "--cache-dir", cache, "s3://assets/avatars/1.png"])
        let lost = first.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        try FileManager.default.removeItem(atPath: lost)
        let repaired = try await WorkerBinary.run(
            ["verify", "--repair", "--cache-dir", cache],
            environment: moto.environment(moto.user, home: directory.path))
        #expect(repaired.code == 0, "\(repaired.stdout) \(repaired.stderr)")
        #expect(FileManager.default.fileExists(atPath: lost), "\(lost) was not fetched again")
    }

    @Test func aProfileWithASessionTokenSignsAndATokenTheServerDoesNotAcceptIsRefused() async throws {
        let moto = try MotoS3(objects: ["assets": Self.objects])
        defer { moto.stop() }
        let directory = TemporaryDirectory()
        let path = manifest(directory)
        // moto does not model expiry: the refused token is one it never issued for this key.
        let stale = String(moto.session.token!.reversed())
        let credentials = directory.write(
            "credentials",
            """
            [default]
            aws_access_key_id = \(moto.user.id)
            aws_secret_access_key = not-this-one
            [ci]
            aws_access_key_id = \(moto.session.id)
            aws_secret_access_key = \(moto.session.secret)
            aws_session_token = \(moto.session.token!)
            [stale]
            aws_access_key_id = \(moto.session.id)
            aws_secret_access_key = \(moto.session.secret)
            aws_session_token = \(stale)

            """)
        let config = directory.write("config", "[profile ci]\nregion = ap-south-1\n[profile stale]\nregion = us-west-2\n")
        let files = ["AWS_SHARED_CREDENTIALS_FILE": credentials, "AWS_CONFIG_FILE": config]
        var extra = files
        extra["AWS_PROFILE"] = "stale"
        let staleReport = directory.path + "/stale.json"
        let refused = try await WorkerBinary.run(
            [
                "sync", path, "--cache-dir", directory.path + "/c1", "--report", staleReport,
                "--retries", "0",
            ], environment: moto.environment(nil, home: directory.path, extra: extra))
        #expect(refused.code == 1, "\(refused.code) \(refused.stderr)")
        let message = try #require(try rows(staleReport).first?["error"] as? String)
        // S3 answers a token it does not take (expired, or never issued) with 400 or 403.
        #expect(
            (message.contains("HTTP 400") || message.contains("HTTP 403")) && message.contains(moto.session.id)
                && message.contains("us-west-2"), "\(message)")
        #expect(!refused.stderr.contains(stale) && !refused.stderr.contains(moto.session.secret))

        extra["AWS_PROFILE"] = "ci"
        let good = try await WorkerBinary.run(
            ["sync", path, "--cache-dir", directory.path + "/c2", "--retries", "0"],
            environment: moto.environment(nil, home: directory.path, extra: extra))
        #expect(good.code == 0, "\(good.code) \(good.stderr)")

        // A profile that is nowhere, and a credentials file that cannot be read: exit 2, named.
        extra["AWS_PROFILE"] = "nowhere"
        let nowhere = try await WorkerBinary.run(
            ["sync", path, "--cache-dir", directory.path + "/c3"],
            environment: moto.environment(nil, home: directory.path, extra: extra))
        #expect(nowhere.code == 2 && nowhere.stderr.contains("'nowhere'") && nowhere.stderr.contains(credentials), "\(nowhere.stderr)")
        let unreadable = try await WorkerBinary.run(
            ["sync", path, "--cache-dir", directory.path + "/c4"],
            environment: moto.environment(
                nil, home: directory.path,
                extra: ["AWS_SHARED_CREDENTIALS_FILE": directory.path]))
        #expect(unreadable.code == 2 && unreadable.stderr.contains(directory.path), "\(unreadable.stderr)")
        let missing = try await WorkerBinary.run(
            ["sync", path, "--cache-dir", directory.path + "/c5"],
            environment: moto.environment(
                nil, home: directory.path,
                extra: ["AWS_SHARED_CREDENTIALS_FILE": directory.path + "/none"]))
        #expect(missing.code == 2 && missing.stderr.contains(directory.path + "/none"), "\(missing.stderr)")
        for cache in ["c3", "c4", "c5"] {
            #expect(!FileManager.default.fileExists(atPath: directory.path + "/" + cache), "\(cache): the cache was touched")
        }
    }

    @Test func signedBodiesGoToTheTierOnlyWhenItIsDeclaredPrivateAndUnsignedRefusalsSaySo() async throws {
        let moto = try MotoS3(objects: ["assets": Self.objects])
        defer { moto.stop() }
        let tier = try WebDAVTier()
        defer { tier.stop() }
        let directory = TemporaryDirectory()
        let path = manifest(directory)
        func remote(_ report: String) throws -> [String: Any] {
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])
            return try #require(object["remote_cache"] as? [String: Any])
        }
        let first = directory.path + "/first.json"
        let kept = try await WorkerBinary.run(
            [
                "sync", path, "--cache-dir", directory.path + "/c1", "--report", first,
                "--remote-cache", tier.url,
            ], environment: moto.environment(moto.user, home: directory.path))
        #expect(kept.code == 0, "\(kept.stderr)")
        let firstTier = try remote(first)
        #expect(firstTier["private_not_uploaded"] as? Int == 3 && tier.objects.isEmpty, "\(firstTier)")
        let second = directory.path + "/second.json"
        let shared = try await WorkerBinary.run(
            [
                "sync", path, "--cache-dir", directory.path + "/c2", "--report", second,
                "--remote-cache", tier.url, "--remote-cache-upload-private",
            ],
            environment: moto.environment(moto.user, home: directory.path))
        #expect(shared.code == 0, "\(shared.stderr)")
        let secondTier = try remote(second)
        #expect(secondTier["uploads"] as? Int == 3 && tier.objects.count == 3, "\(secondTier)")
        // A third runner without credentials gets every body from the tier; its bucket requests,
        // unsigned, would be refused, and the row would say so.
        let third = directory.path + "/third.json"
        let fromTier = try await WorkerBinary.run(
            [
                "sync", path, "--cache-dir", directory.path + "/c3", "--report", third,
                "--remote-cache", tier.url,
            ], environment: moto.environment(nil, home: directory.path))
        let thirdTier = try remote(third)
        #expect(fromTier.code == 0 && thirdTier["hits"] as? Int == 3, "\(fromTier.stderr) \(thirdTier)")
        let unsigned = try await WorkerBinary.run(
            ["sync", path, "--cache-dir", directory.path + "/c4", "--retries", "0"],
            environment: moto.environment(nil, home: directory.path))
        #expect(unsigned.code == 1 && unsigned.stderr.contains("unsigned: no AWS credentials were found"), "\(unsigned.stderr)")
    }

    @Test func aLargeObjectCutByTheEntryTimeoutIsResumedWithASignedRange() async throws {
        let large = (0..<(4 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }
        let moto = try MotoS3(objects: ["assets": ["big/large.bin": large]])
        defer { moto.stop() }
        let directory = TemporaryDirectory()
        let path = directory.write(
            "m.yaml", "version: 1\nentries:\n  - url: s3://assets/big/large.bin\n    hash: sha256:\(sha256(large))\n")
        let reportPath = directory.path + "/r.json"
        // 1 MiB/s and two seconds an attempt: the first is cut with 2 MiB kept, the second asks the rest.
        let result = try await WorkerBinary.run(
            [
                "sync", path, "--cache-dir", directory.path + "/cache", "--report", reportPath,
                "--limit-rate", "1M", "--entry-timeout", "2",
            ],
            environment: moto.environment(moto.user, home: directory.path))
        #expect(result.code == 0, "\(result.code) \(result.stderr)")
        let row = try #require(try rows(reportPath).first)
        #expect(row["status"] as? String == "added" && (row["attempts"] as? Int ?? 0) >= 2, "\(row)")
        #expect(moto.requests.contains("GET /assets/big/large.bin 206"), "a signed Range request: \(moto.requests)")
    }

    @Test func s3URLsThatS3WouldRefuseAreManifestErrors() async throws {
        let directory = TemporaryDirectory()
        let path = directory.write(
            "m.yaml",
            """
            version: 1
            entries:
              - url: "s3://"
              - url: s3://Bad_Bucket/key.png
              - url: s3://assets
              - url: s3://assets/
              - url: s3://ab/key.png
              - url: s3://192.168.1.1/key.png

            """)
        let result = try await WorkerBinary.run(
            ["sync", path, "--cache-dir", directory.path + "/cache"],
            environment: ["AWS_ENDPOINT_URL": "http://127.0.0.1:1"])
        #expect(result.code == 2, "\(result.code) \(result.stderr)")
        for line in 3...8 { #expect(result.stderr.contains("m.yaml:\(line):10"), "line \(line): \(result.stderr)") }
        #expect(
            result.stderr.contains("lowercase") && result.stderr.contains("no key") && result.stderr.contains("3 to 63")
                && result.stderr.contains("IP address"), "\(result.stderr)")
        let base = directory.write("b.yaml", "version: 1\nbase_url: s3://No/\nentries:\n  - url: a.png\n")
        let refused = try await WorkerBinary.run(["sync", base, "--cache-dir", directory.path + "/cache"])
        #expect(refused.code == 2 && refused.stderr.contains("b.yaml:2:11"), "\(refused.stderr)")
    }
}
