import Synchronization

/// Stops a set of downloads: what is in flight (requests, retry waits) registers how to cancel
/// itself, and `stop()` cancels all of it and refuses anything new.
final class FetchControl: Sendable {
    private struct State {
        var stopped = false
        var nextToken = 0
        var inFlight: [Int: @Sendable () -> Void] = [:]
    }

    private let state = Mutex(State())

    var isStopped: Bool { state.withLock { $0.stopped } }

    /// Registers how to cancel one piece of work; nil when already stopped (the caller cancels
    /// at once). Unregister the token when the work ends.
    func register(_ cancel: @escaping @Sendable () -> Void) -> Int? {
        state.withLock { state in
            guard !state.stopped else { return nil }
            state.nextToken += 1
            state.inFlight[state.nextToken] = cancel
            return state.nextToken
        }
    }

    func unregister(_ token: Int?) {
        guard let token else { return }
        _ = state.withLock { $0.inFlight.removeValue(forKey: token) }
    }

    /// Cancels everything registered; later registrations are refused.
    func stop() {
        let cancels = state.withLock { state in
            state.stopped = true
            defer { state.inFlight.removeAll() }
            return Array(state.inFlight.values)
        }
        for cancel in cancels { cancel() }
    }
}
