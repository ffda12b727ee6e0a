import Foundation
import Testing

/// How many requests an origin gets at once, seen from the origin, through the built binary.
@Suite struct ConcurrencyWindowTests {
    @Test func http1StartsWithOneRequestAndGrowsTowardJobs() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        // Each answer takes 40 ms, so requests sent together overlap at the origin.
        let entries = (0..<40).map { number in ("/slow/40/f/\(number)", harness.serve("\(number)")) }
        let manifest = harness.manifest(entries.map { (path: $0.0, bytes: Optional($0.1)) })
        let result = try WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--jobs", "8", "-q"])
        #expect(result.code == 0, "\(result.stderr)")
        let seen = harness.origin.inFlightAtArrival
        #expect(seen.count == 40)
        #expect(seen.prefix(2) == [1, 1], "the second request waits for the first answer (slow start): \(seen)")
        #expect(seen.max() ?? 0 <= 8, "--jobs caps the connections: \(seen)")
        #expect(seen.max() ?? 0 >= 4, "and the window grows with the answers: \(seen)")
    }

    @Test func aServerThatClosesEveryConnectionGetsFewConnectsAtOnce() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        // `/close/…` answers with `Connection: close` and closes, as HTTP/1.0 servers do.
        let entries = (0..<30).map { number in ("/slow/30/close/f/\(number)", harness.serve("\(number)")) }
        let manifest = harness.manifest(entries.map { (path: $0.0, bytes: Optional($0.1)) })
        let result = try WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--jobs", "16", "-q"])
        #expect(result.code == 0, "\(result.stderr)")
        let seen = harness.origin.inFlightAtArrival
        #expect(seen.count == 30)
        #expect(seen.max() ?? 0 <= 4, "each request is a new connect: at most 4 at once: \(seen)")
    }
}
