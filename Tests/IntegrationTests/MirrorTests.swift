import Foundation
import Glibc
import Testing
import WorkerTestSupport

/// Mirrors and `--rewrite` through the built binary against nginx: a dead or sick primary, a
/// mirror with the wrong bytes, an entry every URL fails, the manifest's mistakes; a rewritten
/// host that is never contacted while the cache keeps the manifest's URLs.
@Suite(.hangLimit) struct MirrorTests {
    /// nginx serving `files` (path → bytes) over http, with `extra` in its server block.
    private static func origin(_ files: [String: [UInt8]], extra: String = "") throws -> NginxServer {
        try NginxServer(
            prepare: { root in
                for (name, bytes) in files {
                    let path = root + "/www" + name
                    try FileManager.default.createDirectory(
                        atPath: (path as NSString).deletingLastPathComponent,
                        withIntermediateDirectories: true)
                    try Data(bytes).write(to: URL(fileURLWithPath: path))
                }
                try FileManager.default.createDirectory(atPath: root + "/www", withIntermediateDirectories: true)
            },
            server: { port, root in
                "listen 127.0.0.1:\(port);\nroot \(root)/www;\n\(extra)"
            })
    }

    private static func base(_ server: NginxServer) -> String { "http://127.0.0.1:\(server.port)" }

    private static func files(_ count: Int, prefix: String = "/a/") -> [String: [UInt8]] {
        Dictionary(
            uniqueKeysWithValues: (0..<count).map { number in
                (
                    prefix + "f\(number).bin",
                    Array("mirrored file \(number)\n".utf8) + [UInt8](repeating: UInt8(number % 251), count: number)
                )
            })
    }

    private func rows(_ path: String) throws -> [[String: Any]] {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        return try #require(object["entries"] as? [[String: Any]])
    }

    private func report(_ path: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
    }

    /// A manifest of `files` under `base`, each pinned; `top` goes before `entries`, `entryExtra`
    /// under each entry.
    private func manifest(
        _ directory: TemporaryDirectory, _ files: [String: [UInt8]], base: String, top: String = "",
        entryExtra: (String) -> String = { _ in "" }
    ) -> String {
        var text = "version: 1\n\(top)entries:\n"
        for (path, bytes) in files.sorted(by: { $0.key < $1.key }) {
            text += "  - url: \(base)\(path)\n    hash: sha256:\(sha256(bytes))\n\(entryExtra(path))"
        }
        return directory.write("m.yaml", text)
    }

    // MARK: - Mirrors

    @Test func aRefusingPrimaryCostsAFewAttemptsAndItsMirrorServesEveryEntry() async throws {
        let files = Self.files(120)
        let mirror = try Self.origin(files)
        defer { mirror.stop() }
        let directory = TemporaryDirectory()
        let refusing = RefusingPort()
        defer { refusing.release() }
        let primary = refusing.origin
        let path = manifest(directory, files, base: primary, top: "mirrors:\n  \"\(primary)/\": \"\(Self.base(mirror))/\"\n")
        let reportPath = directory.path + "/r.json"
        let result = try await WorkerBinary.run(["sync", path, "--cache-dir", directory.path + "/cache", "--report", reportPath])
        #expect(result.code == 0, "\(result.code) \(result.stderr)")
        let entries = try rows(reportPath)
        #expect(entries.count == 120)
        #expect(entries.allSatisfy { $0["status"] as? String == "added" })
        for row in entries {
            let url = try #require(row["url"] as? String)
            #expect(url.hasPrefix(primary), "the row keeps the manifest's URL: \(url)")
            #expect(row["served_by"] as? String == Self.base(mirror) + url.dropFirst(primary.count))
        }
        // The primary's breaker opened after a few entries: the rest went straight to the mirror.
        let triedPrimary = entries.filter { ($0["attempts"] as? Int ?? 0) > 1 }.count
        #expect(triedPrimary >= 1 && triedPrimary <= 8, "entries that tried the dead primary: \(triedPrimary)")
        #expect(mirror.requests.filter { $0.method == "GET" }.count == 120, "one request per entry at the mirror")
        let unreachable = try #require(try report(reportPath)["unreachable_origins"] as? [[String: Any]])
        #expect(unreachable.map { $0["origin"] as? String } == [primary + ""], "\(unreachable)")
        // Every byte is verified: the cache holds exactly the manifest's objects.
        let stored = try await WorkerBinary.run(["verify", "--cache-dir", directory.path + "/cache"])
        #expect(stored.code == 0, "\(stored.stdout) \(stored.stderr)")
    }

    @Test func aSickPrimaryAndAMirrorWithoutTheFileArePassedAndWrongBytesAreNeverStored() async throws {
        let files = Self.files(6)
        let sick = try Self.origin([:], extra: "location / { return 503; }")
        defer { sick.stop() }
        let empty = try Self.origin([:])
        defer { empty.stop() }
        // The "liar" serves other bytes at every path: a wrong body is discarded, the next URL is asked.
        let liar = try Self.origin(Dictionary(uniqueKeysWithValues: files.map { ($0.key, Array("not it".utf8)) }))
        defer { liar.stop() }
        let good = try Self.origin(files)
        defer { good.stop() }
        let directory = TemporaryDirectory()
        var all = files
        let lost = Array("nobody has this".utf8)
        all["/a/lost.bin"] = lost
        let path = manifest(
            directory, all, base: Self.base(sick),
            entryExtra: { name in
                "    mirrors:\n      - \(Self.base(empty))\(name)\n      - \(Self.base(liar))\(name)\n      - \(Self.base(good))\(name)\n"
            })
        let reportPath = directory.path + "/r.json"
        let cache = directory.path + "/cache"
        let result = try await WorkerBinary.run(["sync", path, "--cache-dir", cache, "--report", reportPath, "--retries", "1"])
        #expect(result.code == 1, "one entry fails: \(result.code) \(result.stderr)")
        let entries = try rows(reportPath)
        for (name, _) in files {
            let row = try #require(entries.first { $0["url"] as? String == Self.base(sick) + name })
            #expect(row["status"] as? String == "added")
            #expect(row["served_by"] as? String == Self.base(good) + name)
        }
        let failed = try #require(entries.first { $0["url"] as? String == Self.base(sick) + "/a/lost.bin" })
        #expect(failed["status"] as? String == "failed")
        let error = try #require(failed["error"] as? String)
        for server in [sick, empty, liar, good] {
            #expect(error.contains(Self.base(server) + "/a/lost.bin"), "the error names each URL: \(error)")
        }
        #expect(error.contains("HTTP 404"), "\(error)")
        // Only the right bytes were kept: the liar's body is in no object.
        let objects = directory.files(under: "cache/objects/sha256").filter { !$0.hasSuffix("/") }
        #expect(!objects.contains { $0.hasSuffix(sha256(Array("not it".utf8))) }, "\(objects)")
        #expect(objects.count == files.count, "\(objects)")
        // The 503s opened the primary's breaker: later entries did not ask it.
        let asked = sick.requests.count
        #expect(asked >= 1 && asked <= 7, "requests to the sick primary: \(asked)")
        let verified = try await WorkerBinary.run(["verify", "--cache-dir", cache])
        #expect(verified.code == 0, "\(verified.stdout) \(verified.stderr)")
    }

    @Test func mirrorsOnAnEntryWithoutAHashAndBadMirrorURLsAreManifestErrors() async throws {
        let directory = TemporaryDirectory()
        let path = directory.write(
            "m.yaml",
            """
            version: 1
            mirrors:
              "http://127.0.0.1:1/": "ftp://127.0.0.1:2/"
            entries:
              - url: http://127.0.0.1:1/a.png
                mirrors: ["http://127.0.0.1:3/a.png"]
              - url: http://127.0.0.1:1/b.png
                hash: sha256:\(String(repeating: "ab", count: 32))
                mirrors:
                  - not a url
              - url: c.png
                hash: sha256:\(String(repeating: "cd", count: 32))
                mirrors: ["http://127.0.0.1:3/c.png"]
              - url: http://127.0.0.1:1/d.png
                hash: sha256:\(String(repeating: "ef", count: 32))
                mirrors: ["s3://bucket/"]

            """)
        let result = try await WorkerBinary.run(["sync", path, "--cache-dir", directory.path + "/cache"])
        #expect(result.code == 2, "\(result.code) \(result.stderr)")
        #expect(result.stderr.contains("m.yaml:3:26"), "the map's bad mirror: \(result.stderr)")
        #expect(result.stderr.contains("m.yaml:6:5") && result.stderr.contains("'mirrors' needs a 'hash'"), "\(result.stderr)")
        #expect(result.stderr.contains("m.yaml:10:9"), "the bad mirror URL: \(result.stderr)")
        #expect(result.stderr.contains("m.yaml:11:10") && result.stderr.contains("local file"), "\(result.stderr)")
        #expect(result.stderr.contains("m.yaml:16:15") && result.stderr.contains("has no key"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/cache/objects"), "nothing was touched")
    }

    // MARK: - --rewrite

    @Test func aRewrittenHostIsNeverContactedAndTheCacheKeepsTheManifestsURLs() async throws {
        let files = Self.files(30, prefix: "/pub/")
        let from = try Self.origin(files)
        defer { from.stop() }
        let inside = Dictionary(uniqueKeysWithValues: files.map { ("/mirror" + $0.key, $0.value) })
        let fromURL = Self.base(from)
        // The internal mirror redirects one file to the rewritten host: the rule applies to the hop too.
        let to = try Self.origin(inside, extra: "location = /mirror/pub/moved.bin { return 302 \(fromURL)/pub/f1.bin; }")
        defer { to.stop() }
        let directory = TemporaryDirectory()
        var listed = files
        listed["/pub/moved.bin"] = files["/pub/f1.bin"]
        var text = "version: 1\nentries:\n"
        for (name, bytes) in listed.sorted(by: { $0.key < $1.key }) {
            text += "  - url: \(fromURL)\(name)\n"
            // Half pinned, half not: both are rewritten.
            if name.hasSuffix("0.bin") || name.hasSuffix("2.bin") || name == "/pub/moved.bin" {
                text += "    hash: sha256:\(sha256(bytes))\n"
            }
        }
        let path = directory.write("m.yaml", text)
        let cache = directory.path + "/cache"
        let reportPath = directory.path + "/r.json"
        let rule = "\(fromURL)/=\(Self.base(to))/mirror/"
        let result = try await WorkerBinary.run(["sync", path, "--cache-dir", cache, "--report", reportPath, "--rewrite", rule])
        #expect(result.code == 0, "\(result.code) \(result.stderr)")
        let entries = try rows(reportPath)
        #expect(entries.count == 31 && entries.allSatisfy { ($0["url"] as? String)?.hasPrefix(fromURL + "/pub/") == true })
        #expect(entries.allSatisfy { $0["served_by"] == nil }, "a rewrite is not a mirror")
        #expect(from.requests.isEmpty, "FROM's host was contacted: \(from.requests)")

        // `path` and `get` answer by the manifest's URL, from the cache.
        let located = try await WorkerBinary.run(["path", "--cache-dir", cache, fromURL + "/pub/f2.bin"])
        #expect(located.code == 0, "\(located.stderr)")
        let stored = try Data(contentsOf: URL(fileURLWithPath: located.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(Array(stored) == files["/pub/f2.bin"])
        // A `get` of a new URL through WORKER_REWRITE, and `manifest --urls`, keep the URL too.
        let got = try await WorkerBinary.run(
            ["get", "--cache-dir", cache, fromURL + "/pub/f29.bin"],
            environment: ["WORKER_REWRITE": "http://127.0.0.1:1/=http://127.0.0.1:1/x/ " + rule])
        #expect(got.code == 0, "\(got.stderr)")
        let pinned = try await WorkerBinary.run([
            "manifest", "--urls", directory.write("urls.txt", fromURL + "/pub/f28.bin\n"),
            "--cache-dir", cache, "--rewrite", rule,
        ])
        #expect(pinned.code == 0, "\(pinned.stderr)")
        #expect(pinned.stdout.contains("url: \"\(fromURL)/pub/f28.bin\""), "\(pinned.stdout)")
        #expect(pinned.stdout.contains(sha256(files["/pub/f28.bin"]!)), "\(pinned.stdout)")

        // `verify --repair` fetches a lost object again through the rule.
        let lost = located.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        try FileManager.default.removeItem(atPath: lost)
        let repaired = try await WorkerBinary.run(["verify", "--repair", "--cache-dir", cache, "--rewrite", rule])
        #expect(repaired.code == 0, "\(repaired.stdout) \(repaired.stderr)")
        #expect(FileManager.default.fileExists(atPath: lost), "repaired from TO")
        #expect(from.requests.isEmpty, "FROM's host was contacted: \(from.requests)")
        #expect(to.requests.contains { $0.path == "/mirror/pub/f2.bin" && $0.status == 200 })
    }

    @Test func aRuleThatIsNotFromEqualsToIsAUsageError() async throws {
        let directory = TemporaryDirectory()
        for rule in ["nonsense", "ftp://a/=http://b/", "http://a/=", "http://user:secret@a/x"] {
            let result = try await WorkerBinary.run([
                "get", "--cache-dir", directory.path + "/cache", "--rewrite", rule, "http://127.0.0.1:1/x",
            ])
            #expect(result.code == 2, "\(rule): \(result.code) \(result.stderr)")
            #expect(result.stderr.contains("--rewrite"), "\(result.stderr)")
            #expect(!result.stderr.contains("secret"), "\(result.stderr)")
        }
    }
}
