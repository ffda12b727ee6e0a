/// When to try a failed download again: transient failures only, exponential backoff with full
/// jitter, and the server's `Retry-After` when it gives one (capped).
public struct RetryPolicy: Sendable {
    /// Extra attempts after the first.
    public var retries: Int
    var baseDelay: Double
    var maxDelay: Double

    public init(retries: Int = 3, baseDelay: Double = 0.25, maxDelay: Double = 30) {
        self.retries = retries
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
    }

    /// Seconds to wait before attempt `attempt + 1` (attempt counts from 1), or nil: give up.
    public func delay(after failure: FetchFailure, attempt: Int) -> Double? {
        delay(after: failure, attempt: attempt, jitter: { Double.random(in: 0...1) })
    }

    /// The same with the random part given: `jitter` (0...1, asked for only when there is a
    /// delay to place) places the delay in the upper half of the backoff window.
    func delay(after failure: FetchFailure, attempt: Int, jitter: () -> Double) -> Double? {
        guard failure.isTransient, attempt <= retries else { return nil }
        if let requested = failure.retryAfter { return min(max(requested, 0), maxDelay) }
        let ceiling = min(maxDelay, baseDelay * Double(1 << min(attempt - 1, 20)))
        return ceiling / 2 + ceiling / 2 * min(max(jitter(), 0), 1)
    }
}
