import Synchronization

/// `--limit-rate` and `--max-rps`: paces the body bytes of the whole run (one budget shared by
/// every connection, as curl's `--limit-rate` and rclone's `--bwlimit`) and the requests to each
/// origin. Answers are delays; the fetch engine waits them out, and a delayed
/// body read is back-pressure, so the server is read no faster than the budget.
final class RateLimits: Sendable {
    private struct State {
        /// When the bytes received so far are paid for.
        var bytesPaidAt = 0.0
        /// The next free request slot of each origin.
        var nextRequest: [String: Double] = [:]
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

    /// Seconds to wait before reading more, once `count` more bytes arrived at `now`.
    func delay(afterReceiving count: Int, now: Double = RateLimits.now()) -> Double {
        guard let rate = bytesPerSecond else { return 0 }
        return state.withLock { state in
            let start = max(state.bytesPaidAt, now)
            state.bytesPaidAt = start + Double(count) / rate
            return max(0, state.bytesPaidAt - now)
        }
    }

    /// Seconds to wait before the next request to `origin` may start (it takes that slot).
    func requestDelay(_ origin: String, now: Double = RateLimits.now()) -> Double {
        guard let rate = requestsPerSecond else { return 0 }
        return state.withLock { state in
            let slot = max(now, state.nextRequest[origin] ?? 0)
            state.nextRequest[origin] = slot + 1 / rate
            return slot - now
        }
    }
}
