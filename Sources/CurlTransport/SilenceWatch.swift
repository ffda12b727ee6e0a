/// `--read-timeout` as a plain value: a transfer that receives nothing for `limit` seconds ends as
/// a timeout, noticed within `limit / 20` of it (the engine checks it on a timer; a clock read per
/// received chunk would cost more than the check). Time waiting for a connection or paused by
/// `--limit-rate` is not silence.
struct SilenceWatch: Equatable {
    let limit: Double
    /// When a check last saw new activity (or the watch began).
    private(set) var lastChange: Double
    private var seen: Int

    init(limit: Double, now: Double, activity: Int) {
        self.limit = limit
        lastChange = now
        seen = activity
    }

    /// How often the engine checks: a twentieth of the limit (at least 10 ms).
    var interval: Double { max(limit / 20, 0.01) }

    enum Decision: Equatable {
        /// Nothing arrived for the whole limit.
        case silent
        /// Check again then.
        case checkAt(Double)
    }

    /// A check at `now`: `activity` is the transfer's count of callbacks; `waiting` says it is
    /// not expected to receive (not connected yet, or paused by `--limit-rate`).
    mutating func check(now: Double, activity: Int, waiting: Bool) -> Decision {
        if activity != seen || waiting {
            seen = activity
            lastChange = now
        }
        if now - lastChange >= limit { return .silent }
        return .checkAt(min(lastChange + limit, now + interval))
    }
}
