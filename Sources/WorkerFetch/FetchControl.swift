import Synchronization
import WorkerSupport

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

/// What a set of downloads asks of its stop request (`StopRequest`, the one registry of what a
/// stop cancels): what is in flight registers itself, and a stop cancels all of it; anything
/// registered after the stop is refused (and cancelled by its caller's answer instead).
extension StopRequest {
    var isStopped: Bool { reason != nil }

    /// Why downloads were stopped: the message of the entries that end as `cancelled`.
    var stopReason: String { reason ?? "the run was cancelled" }

    /// Registers work to cancel on a stop; unregister the token when the work ends. After a stop,
    /// nil: nothing is registered.
    func register(_ work: Cancellable) -> Int? {
        watchUnlessStopped { _ in work.cancel() }
    }

    func unregister(_ token: Int?) {
        if let token { unwatch(token) }
    }

    /// Cancels everything registered; later registrations are refused.
    func stop(because reason: String = "the run was cancelled") {
        request(reason)
    }
}

extension StopRequest {
    /// Sends `request` on `engine`, registered so that a stop cancels it; `done` gets the reply
    /// once, on the engine's thread — a `cancelled` one, without a request, when the downloads
    /// were stopped already (then on the caller's thread).
    func send(
        _ request: TransferRequest, handler: consuming sending ResponseHandler, on engine: any FetchEngine,
        done: @escaping @Sendable (ExchangeReply) -> Void
    ) {
        // Set before the transfer starts, so always there when it ends.
        let token = Mutex<Int?>(nil)
        let transfer = engine.transfer(request, handler: handler) { reply in
            self.unregister(token.withLock { $0 })
            done(reply)
        }
        guard let registered = register(.transfer(transfer, on: engine)) else {
            done(
                ExchangeReply(
                    result: .failure(FetchFailure(.cancelled, stopReason)), bytes: 0, multiplexed: false,
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
