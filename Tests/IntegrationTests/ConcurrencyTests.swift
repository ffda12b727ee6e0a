import Foundation
import Testing
import WorkerTestSupport

/// Several `worker sync` processes on one cache at once.
@Suite(.hangLimit) struct ConcurrencyTests {
    @Test func fourProcessesWithOverlappingManifestsShareOneCache() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        var processes: [(ChildProcess, String)] = []
        for worker in 0..<4 {
            // Manifest i names keys [25 i, 25 i + 100): 175 distinct files, most in two or more manifests.
            let keys = (worker * 25..<worker * 25 + 100).map { "k\($0)" }
            let manifest = harness.manifest(keys.map { ("/slow/2/gen/\($0)", TestOrigin.generated($0)) }, name: "m\(worker).yaml")
            let log = harness.directory.path + "/w\(worker).log"
            processes.append((try WorkerBinary.spawn(["sync", manifest, "--cache-dir", harness.cache, "-q"], log: log), log))
        }
        for (process, log) in processes {
            await process.exited()
            #expect(process.terminationStatus == 0, "\((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        }
        let distinct = Set((0..<175).map { sha256(TestOrigin.generated("k\($0)")) })
        #expect(Set(harness.objects()) == distinct, "each object stored once")
        #expect(harness.objects().count == 175)
        // The runs overlap (the lock is held only to commit): a URL two of them want at once may be
        // fetched by both, harmlessly — but each run asks for each of its URLs once: a URL is
        // fetched at most once per manifest naming it (keys 0–24 by one only: exactly once).
        for key in 0..<175 {
            let naming = (0..<4).filter { ($0 * 25..<$0 * 25 + 100).contains(key) }.count
            let hits = harness.origin.hits("/gen/k\(key)")
            #expect(hits >= 1 && hits <= naming, "k\(key): \(hits) requests, named by \(naming) manifests")
        }
        #expect(try harness.records().count == 175)
        let verify = try await WorkerBinary.run(["verify", "--cache-dir", harness.cache])
        #expect(verify.code == 0)
        #expect(verify.stdout.contains("the cache and its index agree"))
    }
}
