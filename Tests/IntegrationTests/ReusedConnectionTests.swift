import Foundation
import Testing
import WorkerTestSupport

/// What a server says on one connection must not reach the next response: libcurl 7.88 (Debian
/// 12) kept a pointer to the previous response's last header in a reused handle and freed it twice
/// when the next response began with a folded header line (curl issue 11101, fixed in 8.1.0) —
/// exit 134 from any server. On such a libcurl every transfer has a handle of its own; from 8.1.0
/// plain GETs reuse one (`HandlePool`), and this test then runs on reused handles.
@Suite(.hangLimit) struct ReusedConnectionTests {
    @Test func aFoldedHeaderAfterA404OnAReusedConnectionFailsNoRun() async throws {
        let origin = try RawOrigin()
        defer { origin.stop() }
        let directory = TemporaryDirectory()
        let body = Array("avatar bytes\n".utf8)
        let notFound = RawOrigin.Answer("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", keepAlive: true)
        let folded = RawOrigin.Answer(
            "HTTP/1.1 200 OK\r\n folded: line\r\nContent-Length: \(body.count)\r\n\r\n", body: body, keepAlive: true)
        let plain = RawOrigin.Answer("HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\n\r\n", body: body, keepAlive: true)
        var manifest = "version: 1\nentries:\n"
        // Pairs in the order the plan keeps (the manifest's): a 404, then a folded answer, on the
        // engines' kept-alive connections. A folded answer is refused or read; its retry is plain.
        for pair in 0..<12 {
            origin.script("/missing/\(pair)", [notFound])
            origin.script("/folded/\(pair)", [folded, plain])
            manifest += "  - url: \(origin.url("/missing/\(pair)"))\n"
            manifest += "  - url: \(origin.url("/folded/\(pair)"))\n    hash: sha256:\(sha256(body))\n"
        }
        let path = directory.write("m.yaml", manifest)
        let report = directory.path + "/r.json"
        let (result, signalled) = try await WorkerBinary.runBoundedReportingSignal(
            ["sync", path, "--cache-dir", directory.path + "/cache", "--report", report, "--retries", "1", "-j", "1"], seconds: 60)
        #expect(!signalled, "the run ended by a signal: \(result.stderr.suffix(2000))")
        #expect(result.code == 1, "the 404s fail, nothing else: \(result.code) \(result.stderr.suffix(2000))")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])
        let entries = try #require(rows["entries"] as? [[String: Any]])
        let statuses = Dictionary(entries.map { ($0["url"] as? String ?? "", $0["status"] as? String ?? "") }, uniquingKeysWith: { $1 })
        for pair in 0..<12 {
            #expect(statuses[origin.url("/missing/\(pair)")] == "failed")
            // Stored, with the bytes its hash names (one object for all twelve).
            #expect(
                statuses[origin.url("/folded/\(pair)")] == "added" || statuses[origin.url("/folded/\(pair)")] == "reused",
                "\(pair): \(statuses[origin.url("/folded/\(pair)")] ?? "no row")")
        }
        #expect(directory.files(under: "cache/objects/sha256").count == 1)
        // The connection was reused: fewer connections than requests is what made the crash.
        #expect(origin.connections < origin.requestCount, "\(origin.connections) connections for \(origin.requestCount) requests")
    }
}
