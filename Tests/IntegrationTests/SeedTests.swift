import Foundation
import ManifestSync
import Testing
import WorkerTestSupport

/// What the libraries and tools `worker` descends from offer: forced refresh, rate limits,
/// the version, completions. Through the binary.
@Suite struct SeedTests {
    @Test func versionIsPrintedAndReported() throws {
        let version = try WorkerBinary.run(["--version"])
        #expect(version.code == 0)
        #expect(version.stdout == "worker \(WorkerVersion.current)\n")
        let directory = TemporaryDirectory()
        let report = directory.path + "/r.json"
        #expect(try WorkerBinary.run(["sync", CommandLineTests.demoManifest, "--cache-dir", directory.path + "/c", "--report", report]).code == 0)
        let document = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])
        #expect(document["worker_version"] as? String == WorkerVersion.current)
    }

    @Test(arguments: ["bash", "zsh", "fish"])
    func completionScripts(shell: String) throws {
        let result = try WorkerBinary.run(["completion", shell])
        #expect(result.code == 0)
        #expect(result.stdout.contains("worker"))
        for word in ["sync", "verify", "cache-dir"] {
            #expect(result.stdout.contains(word), "\(shell) completes \(word)")
        }
        #expect(try WorkerBinary.run(["completion", "powershell"]).code == 2)
    }

    @Test func helpIsGroupedWithExamples() throws {
        let help = try WorkerBinary.run(["sync", "--help"])
        for title in ["NETWORK", "REPORTS AND OUTPUT", "SCHEDULING", "CACHE", "Examples:"] {
            #expect(help.stdout.contains(title), "\(title)\n\(help.stdout)")
        }
    }

    @Test func refreshDownloadsEverythingAgain() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let pinned = harness.serve("pinned", "pinned bytes\n")
        harness.serve("loose", "first version\n")
        let manifest = harness.manifest([("/f/pinned", pinned), ("/f/loose", nil)])
        #expect(try WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache]).code == 0)
        #expect(harness.origin.totalRequests == 2)
        // Without --refresh a warm run asks nothing; with it, every entry is fetched and verified.
        #expect(try WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache]).code == 0)
        #expect(harness.origin.totalRequests == 2)
        harness.serve("loose", "second version\n")
        let report = harness.directory.path + "/r.json"
        let refreshed = try WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--refresh", "--report", report])
        #expect(refreshed.code == 0, "\(refreshed.stderr)")
        #expect(harness.origin.totalRequests == 4)
        let document = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])
        let totals = try #require(document["totals"] as? [String: Any])
        #expect(totals["refreshed"] as? Int == 2 && totals["unchanged"] as? Int == 1 && totals["updated"] as? Int == 1, "\(totals)")
        #expect(try harness.cachedBytes("/f/loose") == Array("second version\n".utf8))
        #expect(refreshed.stdout.contains("refreshed 2"))
        // A refreshed body that no longer matches its pinned hash fails; the verified copy stays.
        harness.serve("pinned", "tampered\n")
        let tampered = try WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--refresh"])
        #expect(tampered.code == 1 && tampered.stderr.contains("hash_mismatch"))
        #expect(try harness.cachedBytes("/f/pinned") == pinned)
    }

    @Test func limitRateIsSharedByTheRun() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        // Two bodies of 384 KiB at 256 KiB/s for the whole run: about 3 s, whatever the connections.
        let bodies = (0..<2).map { index in (0..<(384 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) } }
        for (index, body) in bodies.enumerated() { harness.origin.set("/f/big\(index)", body) }
        let manifest = harness.manifest(bodies.enumerated().map { ("/f/big\($0.offset)", $0.element) })
        let metrics = harness.directory.path + "/m.prom"
        let report = harness.directory.path + "/r.json"
        let started = Date()
        let result = try WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--limit-rate", "256K",
                                           "--metrics", metrics, "--report", report])
        let elapsed = Date().timeIntervalSince(started)
        #expect(result.code == 0, "\(result.stderr)")
        #expect(elapsed >= 2.5, "768 KiB at 256 KiB/s took \(elapsed) s")
        #expect(try String(contentsOfFile: metrics, encoding: .utf8).contains("worker_sync_limit_rate_bytes_per_second{manifests=\"test\"} 262144"))
        let document = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])
        #expect((document["limits"] as? [String: Any])?["limit_rate_bytes_per_second"] as? Int == 262_144)
        #expect(try WorkerBinary.run(["sync", manifest, "--limit-rate", "fast"]).code == 2)
    }

    @Test func maxRequestsPerSecondPacesEachOrigin() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let keys = (0..<11).map { "r\($0)" }
        let manifest = harness.manifest(keys.map { ("/gen/\($0)", TestOrigin.generated($0)) })
        let report = harness.directory.path + "/r.json"
        let started = Date()
        let result = try WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--max-rps", "5", "--report", report])
        let elapsed = Date().timeIntervalSince(started)
        #expect(result.code == 0)
        #expect(elapsed >= 1.9, "11 requests at 5 per second took \(elapsed) s")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])
        #expect((document["limits"] as? [String: Any])?["max_requests_per_second"] as? Double == 5)
    }
}
