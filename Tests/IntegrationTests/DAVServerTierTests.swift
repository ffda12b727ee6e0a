import Foundation
import Testing
import WorkerTestSupport

/// The shared tier on WebDAV servers that do not make collections for a PUT (Apache's mod_dav,
/// `rclone serve webdav`), through the binary: the first refused upload makes them with MKCOL,
/// once a run, and every upload then lands.
@Suite(.hangLimit) struct DAVServerTierTests {
    @Test(arguments: DAVServer.Kind.allCases)
    func aTierOnAnotherWebDAVServerMakesItsCollectionsAndTakesEveryUpload(kind: DAVServer.Kind) async throws {
        let server = try DAVServer(kind)
        defer { server.stop() }
        let origin = try await TestOrigin.start()
        defer { Task { await origin.stop() } }
        let directory = TemporaryDirectory()
        var text = "version: 1\nentries:\n"
        var hashes: [String] = []
        for number in 0..<30 {
            let bytes = (0..<(2000 + number * 31)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ number) }
            origin.set("/a/\(number).png", bytes)
            hashes.append(sha256(bytes))
            text += "  - url: \(origin.url("/a/\(number).png"))\n    hash: sha256:\(sha256(bytes))\n"
        }
        let manifest = directory.write("m.yaml", text)
        let report = directory.path + "/r.json"
        let first = try await WorkerBinary.run([
            "sync", manifest, "--cache-dir", directory.path + "/one", "-j", "8",
            "--remote-cache", server.url, "--report", report, "-q",
        ])
        #expect(first.code == 0, "\(first.stderr)")
        let tier = try #require(
            (try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report)))
                as? [String: Any])?["remote_cache"] as? [String: Any])
        #expect(tier["uploads"] as? Int == 30 && tier["upload_errors"] as? Int == 0, "\(tier)")
        #expect(tier["given_up"] == nil, "\(tier)")
        #expect(server.objects == hashes.sorted())
        // Another machine's cache is filled from the tier alone.
        let requests = origin.totalRequests
        let second = try await WorkerBinary.run([
            "sync", manifest, "--cache-dir", directory.path + "/two",
            "--remote-cache", server.url, "--report", report, "-q",
        ])
        #expect(second.code == 0, "\(second.stderr)")
        #expect(origin.totalRequests == requests, "every body came from the tier")
    }
}
