import Testing
import WorkerTestSupport

@testable import CurlTransport
@testable import WorkerFetch

/// The read timeout's timer rule and the `--limit-rate` bucket, with numbers and a simulated
/// clock: no sockets, no sleeps.
@Suite(.hangLimit) struct PacingTests {
    /// Drives a watch the way the engine does (a check at each time it asks for) and returns when
    /// it called the transfer silent. `activity(t)` is the transfer's callback count at time t.
    private func silentAt(
        limit: Double, until end: Double = 1000, activity: (Double) -> Int, waiting: (Double) -> Bool = { _ in false }
    ) -> Double? {
        var watch = SilenceWatch(limit: limit, now: 0, activity: activity(0))
        var now = watch.interval
        while now < end {
            switch watch.check(now: now, activity: activity(now), waiting: waiting(now)) {
            case .silent: return now
            case .checkAt(let next):
                #expect(next > now)
                now = next
            }
        }
        return nil
    }

    @Test(arguments: [1.0, 2.0, 5.0, 30.0])
    func theReadTimeoutFiresWithinAFewPercentOfItsValue(limit: Double) throws {
        // Bytes until t = 3.7 s (a callback every 10 ms), then nothing.
        let lastByte = 3.7
        let fired = try #require(silentAt(limit: limit) { t in Int(min(t, lastByte) * 100) })
        let silence = fired - lastByte
        #expect(silence >= limit, "not before the limit: \(silence)")
        #expect(silence <= limit * 1.1, "within 10 %: \(silence) for \(limit)")
        #expect(silence <= limit * 1.05 + 0.01, "within a twentieth: \(silence) for \(limit)")
    }

    @Test func aSteadyTrickleAndAPauseAreNotSilence() {
        // A byte every 1.9 s with a limit of 2 s: never silent.
        #expect(silentAt(limit: 2, until: 60) { t in Int(t / 1.9) } == nil)
        // Paused by --limit-rate (or not yet connected) for 10 s: not silence either.
        #expect(
            silentAt(limit: 2, until: 10) { _ in
                0
            } waiting: { _ in
                true
            } == nil)
        // And once the pause ends, the limit counts from there.
        let fired = silentAt(limit: 2, until: 60) { _ in
            0
        } waiting: { t in
            t < 10
        }
        // (The watch sees the pause end at its first check after it: at most a twentieth early.)
        #expect(fired.map { $0 >= 11.9 && $0 <= 12.2 } == true, "\(String(describing: fired))")
    }

    /// Receives `seconds` of simulated time through `connections` transfers sharing one budget,
    /// the way `CurlTransfer` paces: a transfer takes a chunk only while the run's budget is not
    /// overdrawn, else pauses and resumes `lateness` after the debt is paid. Returns bytes per
    /// second delivered.
    private func achievedRate(cap: Int64, connections: Int, lateness: Double, seconds: Double = 6) -> Double {
        let limits = RateLimits(bytesPerSecond: cap, requestsPerSecond: nil)!
        let chunk = 16_384
        let lineRate = 1e9
        var next = [Double](repeating: 0, count: connections)
        var received = 0
        while true {
            let index = next.indices.min { next[$0] < next[$1] }!
            let now = next[index]
            guard now < seconds else { break }
            let wait = limits.wait(now: now)
            if wait > 0 {
                next[index] = now + wait + lateness
                continue
            }
            received += chunk
            limits.spend(chunk, now: now)
            next[index] = now + Double(chunk) / lineRate
        }
        return Double(received) / seconds
    }

    @Test(arguments: [256 << 10, 1 << 20, 10 << 20, 30 << 20, 100 << 20] as [Int64])
    func limitRateDeliversItsCapWithinFivePercent(cap: Int64) {
        for connections in [1, 4, 16] {
            for lateness in [0.0005, 0.002, 0.01] {
                let rate = achievedRate(cap: cap, connections: connections, lateness: lateness)
                let ratio = rate / Double(cap)
                #expect(ratio >= 0.95 && ratio <= 1.05, "cap \(cap), \(connections) connections, \(lateness) s late: \(ratio)")
            }
        }
    }
}
