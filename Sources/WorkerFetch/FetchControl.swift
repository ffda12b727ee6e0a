import Synchronization

/// Something in flight that a stop cancels: a request, or a wait (before a retry, for a slot).
enum Cancellable: Sendable {
    case transfer(any EngineTransfer, on: any FetchEngine)
    case timer(Int, on: any FetchEngine)

    func cancel() {
        switch self {
        case .transfer(let transfer, let engine): engine.abort(transfer, FetchFailure(.cancelled, "the run was cancelled"))
        case .timer(let id, let engine): engine.cancelTimer(id)
        }
    }
}

/// Stops a set of downloads: what is in flight registers itself, and `stop()` cancels all of it.
/// Anything registered after the stop is cancelled at once.
final class FetchControl: Sendable {
    private struct State {
        var stopped = false
        var reason = "the run was cancelled"
        var nextToken = 0
        var inFlight: [Int: Cancellable] = [:]
    }

    private let state = Mutex(State())

    var isStopped: Bool { state.withLock { $0.stopped } }

    /// Why downloads were stopped: the message of the entries that end as `cancelled`.
    var stopReason: String { state.withLock { $0.reason } }

    /// Registers work to cancel on a stop; unregister the token when the work ends. After a stop
    /// the work is cancelled here and nil returned.
    func register(_ work: Cancellable) -> Int? {
        let token = state.withLock { state -> Int? in
            guard !state.stopped else { return nil }
            state.nextToken += 1
            state.inFlight[state.nextToken] = work
            return state.nextToken
        }
        if token == nil { work.cancel() }
        return token
    }

    func unregister(_ token: Int?) {
        guard let token else { return }
        _ = state.withLock { $0.inFlight.removeValue(forKey: token) }
    }

    /// Cancels everything registered; later registrations are cancelled at once.
    func stop(because reason: String = "the run was cancelled") {
        let inFlight = state.withLock { state in
            if !state.stopped { state.reason = reason }
            state.stopped = true
            defer { state.inFlight.removeAll() }
            return Array(state.inFlight.values)
        }
        for work in inFlight { work.cancel() }
    }
}

extension FetchControl {
    /// Sends `request` on `engine`, registered so that a stop cancels it; `done` gets the reply
    /// once, on the engine's thread — a `cancelled` one, without a request, when the downloads
    /// were stopped already (then on the caller's thread).
    func send(_ request: TransferRequest, handler: ResponseHandler, on engine: any FetchEngine,
              done: @escaping @Sendable (ExchangeReply) -> Void) {
        // Set before the transfer starts, so always there when it ends.
        let token = Mutex<Int?>(nil)
        let transfer = engine.transfer(request, handler: handler) { reply in
            self.unregister(token.withLock { $0 })
            done(reply)
        }
        guard let registered = register(.transfer(transfer, on: engine)) else {
            done(ExchangeReply(result: .failure(FetchFailure(.cancelled, stopReason)), bytes: 0, multiplexed: false,
                               closesConnection: false))
            return
        }
        token.withLock { $0 = registered }
        engine.start(transfer)
    }

    /// Calls `then(true)` on `engine`'s thread after `seconds`, or `then(false)` once this control
    /// stops the downloads first.
    func wait(_ seconds: Double, on engine: any FetchEngine, then: @escaping @Sendable (Bool) -> Void) {
        let id = engine.newTimerID()
        guard let token = register(.timer(id, on: engine)) else {
            then(false)
            return
        }
        engine.schedule(id, in: seconds) { fired in
            self.unregister(token)
            then(fired)
        }
    }
}
