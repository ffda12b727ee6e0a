import Logging
import Synchronization

/// What a command gives the library for one run, instead of process-wide state: its logger,
/// where to say that it waits for another run's lock, and what stops it from outside.
public struct RunContext: Sendable {
    public var logger: Logger
    /// Told when the run starts waiting for a lock another run holds, and every 30 s after.
    public var lockNotice: (@Sendable (String) -> Void)?
    /// A stop asked for from outside the run (the command's signal handler).
    public var stop: StopRequest

    public init(
        logger: Logger = Logger(label: "worker"), lockNotice: (@Sendable (String) -> Void)? = nil,
        stop: StopRequest = StopRequest()
    ) {
        self.logger = logger
        self.lockNotice = lockNotice
        self.stop = stop
    }
}

/// A request to stop a run, with its reason ("the run was stopped by SIGTERM"): a wait for a
/// lock ends as "locked", and the downloads stop as `--deadline` stops them (what has finished is
/// kept). The first request's reason stands. The one registry of what a stop cancels: the
/// command's signal handler, lock waits, and each set of downloads (the fetch stage's
/// `register`, `send` and `wait` are watches of one).
public final class StopRequest: Sendable {
    private struct State {
        var reason: String?
        var nextToken = 0
        var watchers: [Int: @Sendable (String) -> Void] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    /// Why the run was asked to stop, or nil.
    public var reason: String? {
        state.withLock { $0.reason }
    }

    /// Asks the run to stop; the watchers are told (once).
    public func request(_ reason: String) {
        let watchers = state.withLock { state -> [@Sendable (String) -> Void] in
            guard state.reason == nil else { return [] }
            state.reason = reason
            return Array(state.watchers.values)
        }
        for watcher in watchers { watcher(reason) }
    }

    /// Until `unwatch`, a request calls `onStop` with its reason (at once, if one came already).
    public func watch(_ onStop: @escaping @Sendable (String) -> Void) -> Int {
        let (token, reason) = state.withLock { state in
            state.nextToken += 1
            state.watchers[state.nextToken] = onStop
            return (state.nextToken, state.reason)
        }
        if let reason { onStop(reason) }
        return token
    }

    /// `watch`, unless a stop came already: then nil, and `onStop` is not called.
    public func watchUnlessStopped(_ onStop: @escaping @Sendable (String) -> Void) -> Int? {
        state.withLock { state -> Int? in
            guard state.reason == nil else { return nil }
            state.nextToken += 1
            state.watchers[state.nextToken] = onStop
            return state.nextToken
        }
    }

    public func unwatch(_ token: Int) {
        _ = state.withLock { $0.watchers.removeValue(forKey: token) }
    }
}
