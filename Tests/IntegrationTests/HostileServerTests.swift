import Crypto
import Foundation
import Testing
import WorkerTestSupport

/// The second review's findings, each reproduced through the built binary: what one hostile
/// server, file or flag must not do to a run.
@Suite(.hangLimit) struct HostileServerTests {
    private func json(_ path: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
    }

    private func entries(_ path: String) throws -> [[String: Any]] {
        try #require(try json(path)["entries"] as? [[String: Any]])
    }

    private func manifest(
        _ directory: TemporaryDirectory, _ urls: [(String, String?)], name: String = "m.yaml",
        extra: String = ""
    ) -> String {
        var text = "version: 1\nname: hostile\n\(extra)entries:\n"
        for (url, hash) in urls {
            text += "  - url: \(url)\n"
            if let hash { text += "    hash: sha256:\(hash)\n" }
        }
        return directory.write(name, text)
    }

    private static func body(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) } }

    // MARK: - A resumed 206 with a huge Content-Length

    @Test func aResumedAnswerWithAHugeLengthFailsOnlyItsEntry() async throws {
        let origin = try RawOrigin()
        defer { origin.stop() }
        let directory = TemporaryDirectory()
        let whole = Self.body(3 << 20)
        let kept = (3 << 20) / 2
        let first = RawOrigin.Answer(
            "HTTP/1.1 200 OK\r\nContent-Length: \(whole.count)\r\nETag: \"v1\"\r\nConnection: close\r\n\r\n",
            body: Array(whole.prefix(kept)))
        let hostile = RawOrigin.Answer(
            "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes \(kept)-\(whole.count - 1)/\(whole.count)\r\n"
                + "Content-Length: 9223372036854775807\r\nETag: \"v1\"\r\nConnection: close\r\n\r\n",
            body: Array(whole.suffix(from: kept)))
        origin.script("/big", [first, hostile])
        origin.script("/small", [RawOrigin.Answer("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc")])
        let path = manifest(directory, [(origin.url("/big"), sha256(whole)), (origin.url("/small"), nil)])
        let cache = directory.path + "/cache"
        let report = directory.path + "/r.json"
        let result = try await WorkerBinary.run(["sync", path, "--cache-dir", cache, "--report", report, "--retries", "2"])
        #expect(result.code == 1, "only the entry fails, the run ends normally: \(result.code) \(result.stderr)")
        let rows = try entries(report)
        #expect(rows.first { $0["url"] as? String == origin.url("/big") }?["status"] as? String == "failed")
        #expect(rows.first { $0["url"] as? String == origin.url("/small") }?["status"] as? String == "added")
        #expect(directory.files(under: "cache/partial").isEmpty, "the kept part is dropped: \(directory.files(under: "cache/partial"))")
        // The next run is not poisoned: it starts over and fails the same way, without a trap.
        let again = try await WorkerBinary.run(["sync", path, "--cache-dir", cache, "--retries", "0"])
        #expect(again.code == 1, "\(again.code) \(again.stderr)")

        // The same through `get`.
        let other = TemporaryDirectory()
        origin.script("/big2", [first, hostile])
        let got = try await WorkerBinary.run(["get", origin.url("/big2"), "--cache-dir", other.path + "/cache", "--retries", "2"])
        #expect(got.code == 1, "\(got.code) \(got.stderr)")
    }

    // MARK: - Hashless entries: spliced or encoded bodies are never stored

    @Test func hashlessEntriesNeverStoreSplicedOrEncodedBytes() async throws {
        let origin = try RawOrigin()
        defer { origin.stop() }
        let directory = TemporaryDirectory()
        let whole = Self.body(3 << 20)
        let kept = (3 << 20) / 2
        let cut = RawOrigin.Answer(
            "HTTP/1.1 200 OK\r\nContent-Length: \(whole.count)\r\nETag: \"v1\"\r\nConnection: close\r\n\r\n",
            body: Array(whole.prefix(kept)))
        // The rest, but the range's end and total disagree with its length (a splice).
        let spliced = RawOrigin.Answer(
            "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes \(kept)-\(whole.count + 99)/\(whole.count + 100)\r\n"
                + "Content-Length: \(whole.count - kept)\r\nETag: \"v1\"\r\nConnection: close\r\n\r\n",
            body: Array(whole.suffix(from: kept)))
        origin.script("/spliced", [cut, spliced])
        origin.script(
            "/identity-then-gzip",
            [
                RawOrigin.Answer(
                    "HTTP/1.1 200 OK\r\nContent-Encoding: identity\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\nConnection: close\r\n\r\ngzzz"
                )
            ])
        origin.script(
            "/te-gzip",
            [
                RawOrigin.Answer(
                    "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n4\r\ngzzz\r\n0\r\n\r\n")
            ])
        origin.script(
            "/two-lengths",
            [
                RawOrigin.Answer(
                    "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nContent-Length: 2\r\nConnection: close\r\n\r\nabcd")
            ])
        origin.script("/no-content", [RawOrigin.Answer("HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")])
        let paths = ["/spliced", "/identity-then-gzip", "/te-gzip", "/two-lengths", "/no-content"]
        let path = manifest(directory, paths.map { (origin.url($0), nil) })
        let cache = directory.path + "/cache"
        let report = directory.path + "/r.json"
        let result = try await WorkerBinary.run(["sync", path, "--cache-dir", cache, "--report", report, "--retries", "1"])
        #expect(result.code == 1, "\(result.code) \(result.stderr)")
        let rows = try entries(report)
        for path in paths {
            let row = rows.first { $0["url"] as? String == origin.url(path) }
            #expect(row?["status"] as? String == "failed", "\(path) is not stored: \(row ?? [:])")
        }
        #expect(directory.files(under: "cache/objects").isEmpty, "nothing was stored: \(directory.files(under: "cache/objects"))")
    }

    // MARK: - Validators with control bytes

    @Test func validatorsWithControlBytesAreNeverSentBack() async throws {
        let origin = try RawOrigin()
        defer { origin.stop() }
        let directory = TemporaryDirectory()
        origin.script(
            "/v",
            [
                RawOrigin.Answer(
                    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nETag: \"a\u{1}b\u{7f}\"\r\nLast-Modified: Tue,\u{1b}[2J 01 Jan 2030\r\nConnection: close\r\n\r\nok"
                )
            ])
        let path = manifest(directory, [(origin.url("/v"), nil)])
        let cache = directory.path + "/cache"
        #expect(try await WorkerBinary.run(["sync", path, "--cache-dir", cache]).code == 0)
        let again = try await WorkerBinary.run(["sync", path, "--cache-dir", cache, "--revalidate"])
        #expect(again.code == 0, "\(again.stderr)")
        let requests = origin.requests("/v")
        try #require(requests.count == 2)
        let second = requests[1].lowercased()
        #expect(!second.contains("if-none-match") && !second.contains("if-modified-since"), "\(requests[1])")
        #expect(!requests[1].unicodeScalars.contains { $0.value == 1 || $0.value == 0x7f || $0.value == 0x1b })
    }

    // MARK: - Text from manifests and servers

    /// Every control character a terminal acts on (C0 but tab and newline, DEL, C1).
    private static func controls(_ text: String) -> [UInt32] {
        text.unicodeScalars.map(\.value).filter { ($0 < 0x20 && $0 != 0x0a && $0 != 0x09) || (0x7f...0x9f).contains($0) }
    }

    @Test func textFromManifestsAndServersIsSanitizedForEachOutput() async throws {
        let origin = try RawOrigin()
        defer { origin.stop() }
        let directory = TemporaryDirectory()
        let hostileName = "evil\u{1b}]0;owned\u{7}\u{9b}31m <img src=x onerror=alert(1)> [link](https:example.invalid) `tick`"
        origin.script(
            "/enc",
            [
                RawOrigin.Answer(
                    "HTTP/1.1 200 OK\r\nContent-Encoding: x\u{1b}[31m<img src=y>\u{c2}\u{9b}\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
                )
            ])
        let name = hostileName.replacingOccurrences(of: "\"", with: "")
        let quoted = name.unicodeScalars.map {
            $0.value < 0x20 || (0x7f...0x9f).contains($0.value) ? String(format: "\\x%02x", $0.value) : String($0)
        }.joined()
        let path = directory.write(
            "m.yaml",
            """
            version: 1
            name: "\(quoted)"
            entries:
              - url: \(origin.url("/enc"))
            """)
        let cache = directory.path + "/cache"
        let summary = directory.path + "/summary.md"
        let html = directory.path + "/r.html"
        let junit = directory.path + "/j.xml"
        let result = try await WorkerBinary.run([
            "sync", path, "--cache-dir", cache, "--summary-md", summary, "--report-html", html,
            "--junit", junit, "--retries", "0",
        ])
        #expect(result.code == 1, "\(result.stderr)")
        #expect(Self.controls(result.stdout).isEmpty, "stdout: \(Self.controls(result.stdout))")
        #expect(Self.controls(result.stderr).isEmpty, "stderr: \(Self.controls(result.stderr))")
        let markdown = try String(contentsOfFile: summary, encoding: .utf8)
        // Every `<`, `[` and `]` the name and the server's words brought is escaped: no tag, no link.
        #expect(markdown.range(of: #"(?<!\\)[<\[\]]"#, options: .regularExpression) == nil, "\(markdown)")
        #expect(markdown.contains("\\<img"), "\(markdown)")
        #expect(Self.controls(markdown).isEmpty)
        for file in [html, junit] {
            let text = try String(contentsOfFile: file, encoding: .utf8)
            #expect(!text.contains("<img"), "\(file)")
            #expect(Self.controls(text.replacingOccurrences(of: "\r", with: "")).isEmpty, "\(file): \(Self.controls(text))")
        }
        // JSON log lines escape them too.
        let logged = try await WorkerBinary.run(["sync", path, "--cache-dir", cache, "--retries", "0", "--log-format", "json"])
        #expect(Self.controls(logged.stderr).isEmpty, "json stderr: \(Self.controls(logged.stderr))")
        let status = try await WorkerBinary.run(["status", "--cache-dir", cache])
        #expect(Self.controls(status.stdout).isEmpty, "status: \(Self.controls(status.stdout))")
    }

    @Test func aLocalPathAndTheLockFileReachTheTerminalClean() async throws {
        let directory = TemporaryDirectory()
        let path = directory.write("m.yaml", "version: 1\nentries:\n  - url: a%1b%5b2J%c2%9b.txt\n")
        let cache = directory.path + "/cache"
        let result = try await WorkerBinary.run(["sync", path, "--cache-dir", cache])
        #expect(result.code == 1, "\(result.stderr)")
        #expect(Self.controls(result.stdout + result.stderr).isEmpty, "\(Self.controls(result.stdout + result.stderr))")
        // Another run holds the lock and its file says something hostile.
        let lock = cache + "/lock"
        let fd = open(lock, O_RDWR | O_CREAT, 0o644)
        try #require(fd >= 0)
        defer { close(fd) }
        #expect(flock(fd, LOCK_EX) == 0)
        ftruncate(fd, 0)
        let note = "pid 1\u{1b}]2;title\u{7}\u{1b}[2J\n"
        _ = note.withCString { pwrite(fd, $0, strlen($0), 0) }
        let waited = try await WorkerBinary.run(["sync", path, "--cache-dir", cache, "--wait-lock", "0.3"])
        #expect(waited.code == 3, "\(waited.stderr)")
        #expect(waited.stderr.contains("pid 1"), "\(waited.stderr)")
        #expect(Self.controls(waited.stderr).isEmpty, "\(Self.controls(waited.stderr))")
    }

    // MARK: - Hard links planted in the cache

    @Test func hardLinksPlantedInTheCacheAreNotWrittenThrough() async throws {
        let origin = try RawOrigin()
        defer { origin.stop() }
        let directory = TemporaryDirectory()
        let whole = Self.body(3 << 20)
        let url = origin.url("/big")
        origin.script(
            "/big",
            [
                RawOrigin.Answer(
                    "HTTP/1.1 200 OK\r\nContent-Length: \(whole.count)\r\nETag: \"v1\"\r\nConnection: close\r\n\r\n", body: whole)
            ])
        let path = manifest(directory, [(url, sha256(whole))])
        let cache = directory.path + "/cache"
        try FileManager.default.createDirectory(atPath: cache + "/partial", withIntermediateDirectories: true)
        // A victim file of ours, hard-linked in as the kept part of this URL, with its record.
        let victim = directory.write("victim.txt", "precious\n")
        let key = sha256(url)
        #expect(link(victim, cache + "/partial/" + key) == 0)
        directory.write("cache/partial/\(key).meta", "\"v1\"\n\(url)\n")
        // And as the lock.
        let lockVictim = directory.write("lock-victim.txt", "also precious\n")
        #expect(link(lockVictim, cache + "/lock") == 0)

        let result = try await WorkerBinary.run(["sync", path, "--cache-dir", cache])
        #expect(result.code == 0, "\(result.stderr)")
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious\n", "no byte is appended through the link")
        #expect(try String(contentsOfFile: lockVictim, encoding: .utf8) == "also precious\n", "the lock's other name is not truncated")
        #expect(origin.requests("/big").allSatisfy { !$0.lowercased().contains("range:") }, "nothing is resumed from the planted file")
    }

    @Test func aCacheEveryUserCanWriteIsRefusedForWritingAndServesReads() async throws {
        let directory = TemporaryDirectory()
        let site = directory.path + "/site"
        try FileManager.default.createDirectory(atPath: site, withIntermediateDirectories: true)
        directory.write("site/a.txt", "a\n")
        let path = directory.write("site/m.yaml", "version: 1\nentries:\n  - url: a.txt\n")
        let cache = directory.path + "/cache"
        let first = try await WorkerBinary.run(["sync", path, "--cache-dir", cache])
        #expect(first.code == 0, "\(first.stderr)")
        chmod(cache + "/tmp", 0o777)
        let result = try await WorkerBinary.run(["sync", path, "--cache-dir", cache])
        #expect(result.code == 4, "\(result.code) \(result.stderr)")
        #expect(result.stderr.contains("\(cache)/tmp can be written by every user"), "\(result.stderr)")
        #expect(result.stderr.contains("mode 0777") && result.stderr.contains("chmod -R go-w"), "\(result.stderr)")
        for command in [["gc"], ["clear"], ["rm", "a.txt"], ["verify", "--repair"]] {
            let refused = try await WorkerBinary.run(command + ["--cache-dir", cache])
            #expect(refused.code == 4, "\(command): \(refused.code) \(refused.stderr)")
        }
        // Reading commands still answer.
        #expect(try await WorkerBinary.run(["status", "--cache-dir", cache]).code == 0)
        #expect(try await WorkerBinary.run(["verify", "--cache-dir", cache]).code == 0)
        chmod(cache + "/tmp", 0o755)
        let fixed = try await WorkerBinary.run(["sync", path, "--cache-dir", cache])
        #expect(fixed.code == 0, "\(fixed.stderr)")
    }
}
