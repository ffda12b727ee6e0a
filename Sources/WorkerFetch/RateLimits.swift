import Synchronization
import WorkerManifest
import WorkerSupport

/// `--limit-rate` and `--max-rps`: paces the body bytes of the whole run (one budget shared by
/// every connection, as curl's `--limit-rate` and rclone's `--bwlimit`) and the requests to each
/// origin. Answers are delays; the fetch engine waits them out, and a delayed
/// body read is back-pressure, so the server is read no faster than the budget.
public final class RateLimits: Sendable {
    private struct State {
        /// When the bytes received so far are paid for.
        var bytesPaidAt = 0.0
        /// The next free request slot of each origin.
        var nextRequest: [Origin: Double] = [:]
    }

    let bytesPerSecond: Double?
    let requestsPerSecond: Double?
    private let state = Mutex(State())

    init?(bytesPerSecond: Int64?, requestsPerSecond: Double?) {
        guard bytesPerSecond != nil || requestsPerSecond != nil else { return nil }
        self.bytesPerSecond = bytesPerSecond.map(Double.init)
        self.requestsPerSecond = requestsPerSecond
    }

    static func now() -> Double {
        Monotonic.now()
    }

    /// How far behind its budget the run may fall and still catch up, in seconds: a token
    /// bucket's depth. A paused transfer resumes a little after its bytes are paid for (the
    /// engine's timer, a poll); without this credit each such lag is lost for good, and the run
    /// delivers well under its cap (10M gave 9.3 MB/s, 30M 20.6). Over any stretch of time the
    /// run receives at most this much more than the cap allows.
    static let burst = 0.1

    /// Seconds before any transfer may take more body bytes: zero while the run has not spent
    /// past its budget (the bucket is not in debt).
    package func wait(now: Double = RateLimits.now()) -> Double {
        guard bytesPerSecond != nil else { return 0 }
        return state.withLock { max(0, $0.bytesPaidAt - now) }
    }

    /// `count` body bytes were taken at `now`: they are paid for `count / rate` seconds after the
    /// earlier ones (or after `now - burst`, whichever is later).
    package func spend(_ count: Int, now: Double = RateLimits.now()) {
        guard let rate = bytesPerSecond else { return }
        state.withLock { state in
            state.bytesPaidAt = max(state.bytesPaidAt, now - Self.burst) + Double(count) / rate
        }
    }

    /// Seconds to wait before the next request to `origin` may start (it takes that slot).
    func requestDelay(_ origin: Origin, now: Double = RateLimits.now()) -> Double {
        guard let rate = requestsPerSecond else { return 0 }
        return state.withLock { state in
            let slot = max(now, state.nextRequest[origin] ?? 0)
            state.nextRequest[origin] = slot + 1 / rate
            return slot - now
        }
    }
}
