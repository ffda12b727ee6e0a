import Foundation
import Testing
import WorkerTestSupport

/// How many requests an origin gets at once, seen from the origin, through the built binary.
@Suite(.hangLimit) struct ConcurrencyWindowTests {
    /// Syncs `count` entries served at `/ROUTE/f/N` and returns how many requests were in flight
    /// at the origin as each one arrived.
    /// Without `jobs`, the binary's default applies.
    func inFlightAtArrival(route: String, count: Int, jobs: Int? = nil) async throws -> [Int] {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let entries = (0..<count).map { number in (path: "/\(route)/f/\(number)", bytes: Optional(harness.serve("\(number)"))) }
        let result = try await WorkerBinary.run(
            ["sync", harness.manifest(entries), "--cache-dir", harness.cache, "-q"]
                + (jobs.map { ["--jobs", "\($0)"] } ?? []))
        #expect(result.code == 0, "\(result.stderr)")
        return harness.origin.inFlightAtArrival
    }

    @Test func http1StartsWithOneRequestAndGrowsTowardJobs() async throws {
        // Each answer takes 40 ms, so requests sent together overlap at the origin.
        let seen = try await inFlightAtArrival(route: "slow/40", count: 40, jobs: 8)
        #expect(seen.count == 40)
        #expect(seen.prefix(2) == [1, 1], "the second request waits for the first answer (slow start): \(seen)")
        #expect(seen.max() ?? 0 <= 8, "--jobs caps the connections: \(seen)")
        #expect(seen.max() ?? 0 >= 4, "and the window grows with the answers: \(seen)")
    }

    @Test(arguments: [1, 3, 40])
    func jobsCapsTheConnectionsAcrossTheFetchEngines(jobs: Int) async throws {
        // Each fetch engine keeps its own connections; together they may not open more than
        // --jobs to an origin, however the requests move between them, and they keep them.
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        // Answers slow enough that the window can fill: 10 ms let a loaded machine (CI, the suite
        // beside it) answer the first requests before it had sent the fortieth (37 of 40 seen).
        let delay = jobs >= 10 ? 100 : 10
        let entries = (0..<min(400, 60 * jobs)).map { number in
            (path: "/slow/\(delay)/f/\(number)", bytes: Optional(harness.serve("\(number)")))
        }
        let result = try await WorkerBinary.run([
            "sync", harness.manifest(entries), "--cache-dir", harness.cache, "-q", "--jobs", "\(jobs)",
        ])
        #expect(result.code == 0, "\(result.stderr)")
        let connections = harness.origin.connections
        #expect(connections.mostAtOnce <= jobs, "\(connections)")
        #expect(connections.accepted <= jobs, "connections are kept, not opened again: \(connections)")
        #expect(harness.origin.inFlightAtArrival.max() == jobs, "and all of them are used")
    }

    @Test func byDefaultTheWindowGrowsPastSixteenUpToFifty() async throws {
        // Slow start triples the requests sent together with each round of 40 ms answers
        // (1, 3, 9, …), so 150 entries reach well past the old default of 16.
        let seen = try await inFlightAtArrival(route: "slow/40", count: 150)
        #expect(seen.count == 150)
        #expect(seen.prefix(2) == [1, 1], "slow start still begins with one: \(seen)")
        #expect(seen.max() ?? 0 > 16, "the default is 50 connections per origin: \(seen)")
        #expect(seen.max() ?? 0 <= 50, "and 50 is the cap: \(seen)")
    }

    @Test func aServerThatClosesEveryConnectionGetsFewConnectsAtOnce() async throws {
        // `/close/…` answers with `Connection: close` and closes, as HTTP/1.0 servers do.
        let seen = try await inFlightAtArrival(route: "slow/30/close", count: 30, jobs: 16)
        #expect(seen.count == 30)
        #expect(seen.max() ?? 0 <= 4, "each request is a new connect: at most 4 at once: \(seen)")
    }
}
