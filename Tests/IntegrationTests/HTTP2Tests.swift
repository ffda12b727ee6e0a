import Foundation
import Testing
import WorkerTestSupport

/// HTTP/2 end to end, as users meet it: nginx with `http2` over TLS (libcurl prefers h2 there),
/// a test certificate trusted through `--ca-cert`. Streams multiplexed within nginx's stream limit,
/// a resumed body, a stream reset in the middle of others.
@Suite(.hangLimit) struct HTTP2Tests {
    static func body(_ number: Int, size: Int = 3000) -> [UInt8] {
        Array("file \(number)\n".utf8) + (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ number) }
    }

    /// nginx serving `files` (name → bytes) over https with http2, at most `streams` at once per
    /// connection; `/reset/…` answers by resetting the stream (nginx's 444 over HTTP/2).
    private func origin(_ files: [String: [UInt8]], streams: Int = 8, in directory: TemporaryDirectory) throws -> (NginxServer, String) {
        try NginxServer.https(
            files, in: directory, http2: true,
            extra: """
                http2_max_concurrent_streams \(streams);
                location /reset/ { return 444; }
                """)
    }

    private func manifest(_ directory: TemporaryDirectory, port: Int, _ entries: [(String, [UInt8]?)]) -> String {
        var text = "version: 1\nentries:\n"
        for (path, bytes) in entries {
            text += "  - url: https://127.0.0.1:\(port)/\(path)\n"
            if let bytes { text += "    hash: sha256:\(sha256(bytes))\n" }
        }
        return directory.write("m.yaml", text)
    }

    @Test func manyFilesOverOneMultiplexedConnectionWithinTheStreamLimit() async throws {
        var files: [String: [UInt8]] = [:]
        for number in 0..<300 { files["a/\(number).png"] = Self.body(number) }
        let directory = TemporaryDirectory()
        let (server, ca) = try origin(files, streams: 8, in: directory)
        defer { server.stop() }
        let path = manifest(directory, port: server.port, files.keys.sorted().map { ($0, files[$0]) })
        let result = try await WorkerBinary.run([
            "sync", path, "--cache-dir", directory.path + "/cache", "--ca-cert", ca,
            "--report", directory.path + "/r.json",
        ])
        #expect(result.code == 0, "\(result.stderr)")
        let requests = server.requests
        #expect(requests.count == 300, "\(requests.count) requests")
        #expect(requests.allSatisfy { $0.protocolName == "HTTP/2.0" && $0.status == 200 }, "\(requests.prefix(3))")
        #expect(try await WorkerBinary.run(["verify", "--cache-dir", directory.path + "/cache"]).code == 0)
    }

    @Test func aBodyCutBeforeIsResumedOverHTTP2() async throws {
        let whole = Self.body(7, size: 3 << 20)
        let directory = TemporaryDirectory()
        let (server, ca) = try origin(["big.bin": whole], in: directory)
        defer { server.stop() }
        let url = "https://127.0.0.1:\(server.port)/big.bin"
        let cache = directory.path + "/cache"
        let kept = (3 << 20) / 2
        // A part an earlier run kept, with nginx's ETag for the file as its validator.
        let etag = try #require(try await etagOf(url, ca: ca))
        directory.write("cache/partial/\(sha256(url))", Array(whole.prefix(kept)))
        directory.write("cache/partial/\(sha256(url)).meta", "\(etag)\n\(url)\n")
        let path = manifest(directory, port: server.port, [("big.bin", whole)])
        let result = try await WorkerBinary.run([
            "sync", path, "--cache-dir", cache, "--ca-cert", ca, "--report", directory.path + "/r.json",
        ])
        #expect(result.code == 0, "\(result.stderr)")
        let requests = server.requests.filter { $0.path == "/big.bin" && $0.method == "GET" }
        #expect(requests.last.map { $0.status == 206 && $0.protocolName == "HTTP/2.0" } == true, "the rest, as a range: \(requests)")
        let object = cache + "/objects/sha256/" + sha256(whole).prefix(2) + "/" + sha256(whole)
        #expect(FileManager.default.contents(atPath: object) == Data(whole))
    }

    @Test func aResetStreamFailsItsEntryAndTheOthersGoOn() async throws {
        var files: [String: [UInt8]] = [:]
        for number in 0..<40 { files["a/\(number).png"] = Self.body(number) }
        let directory = TemporaryDirectory()
        let (server, ca) = try origin(files, in: directory)
        defer { server.stop() }
        let entries = files.keys.sorted().map { ($0, files[$0]) } + [("reset/x.png", Optional(Self.body(99)))]
        let path = manifest(directory, port: server.port, entries)
        let report = directory.path + "/r.json"
        let result = try await WorkerBinary.run([
            "sync", path, "--cache-dir", directory.path + "/cache", "--ca-cert", ca,
            "--retries", "1", "--report", report,
        ])
        #expect(result.code == 1, "\(result.stderr)")
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])
        let totals = try #require(document["totals"] as? [String: Int])
        #expect(totals["added"] == 40 && totals["failed"] == 1, "\(totals)")
        let failed = try #require((document["entries"] as? [[String: Any]])?.first { $0["status"] as? String == "failed" })
        #expect(failed["reason"] as? String == "connection" && failed["attempts"] as? Int == 2, "retried once: \(failed)")
    }

    /// nginx's ETag for `url` (a HEAD with the curl command).
    private func etagOf(_ url: String, ca: String) async throws -> String? {
        let result = try await WorkerBinary.run(["-sk", "-I", url], executable: "/usr/bin/curl")
        return result.stdout.split(separator: "\r\n").first { $0.lowercased().hasPrefix("etag:") }
            .map { String($0.dropFirst(5)).trimmingCharacters(in: .whitespaces) }
    }
}
