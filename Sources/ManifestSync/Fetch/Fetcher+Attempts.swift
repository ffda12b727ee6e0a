import FoundationEssentials
import Glibc
import Logging

/// The retry loop: an attempt's outcome is told to the origin gate, and a transient failure is
/// tried again after the retry policy's delay (or the origin's pause), on the engine's thread.
extension Fetcher {
    /// One attempt's result and the body bytes it received.
    struct AttemptOutcome: Sendable {
        let result: Result<Delivery, FetchFailure>
        let bytes: Int64
        /// The last response came over HTTP/2.
        var multiplexed = false
        /// The server closed the connection after the last response.
        var closesConnection = false
    }

    func attempt(_ request: FetchRequest, number: Int, bytes: Int64, control: FetchControl, on engine: CurlEngine,
                 gate: (origin: String, gate: any OriginGate)?, done: @escaping @Sendable (FetchResult) -> Void) {
        if control.isStopped {
            done(FetchResult(result: .failure(FetchFailure(.cancelled, control.stopReason)),
                             attempts: number, bytesReceived: bytes))
            return
        }
        let finished: @Sendable (AttemptOutcome) -> Void = { received in
            let outcome: AttemptOutcome
            if case .failure(let failure) = received.result, failure.reason == .cancelled, control.isStopped {
                // Say why the run stopped it (a deadline names itself).
                outcome = AttemptOutcome(result: .failure(FetchFailure(.cancelled, control.stopReason)), bytes: received.bytes,
                                         multiplexed: received.multiplexed)
            } else {
                outcome = received
            }
            let total = bytes + outcome.bytes
            let problem: String? = if case .failure(let failure) = outcome.result {
                FailureClassifier.originProblem(failure)
            } else {
                nil
            }
            if let gate, !control.isStopped {
                var retryAfter: Double?
                var overloaded = false
                if case .failure(let failure) = outcome.result {
                    retryAfter = failure.retryAfter
                    overloaded = failure.httpStatus == 429 || failure.httpStatus == 503
                }
                gate.gate.record(gate.origin, OriginReport(
                    outcome: problem.map { .unhealthy(problem: $0, retryAfter: retryAfter) } ?? .healthy,
                    multiplexed: outcome.multiplexed, closesConnections: outcome.closesConnection,
                    overloaded: overloaded))
            }
            let giveUp = { @Sendable in
                if let gate, problem != nil, !control.isStopped { gate.gate.entryGaveUp(gate.origin) }
                done(FetchResult(result: outcome.result, attempts: number, bytesReceived: total))
            }
            guard case .failure(let failure) = outcome.result, !control.isStopped,
                  var delay = self.settings.retry.delay(after: failure, attempt: number)
            else {
                giveUp()
                return
            }
            if let gate {
                switch gate.gate.admitRetry(gate.origin) {
                case .giveUp:
                    // The origin was given up while this entry waited: no more requests to it.
                    giveUp()
                    return
                case .wait(let seconds):
                    delay = max(delay, seconds)
                case .go:
                    break
                }
            }
            self.logger.debug("retrying", metadata: ["entry.url": "\(Redact.url(request.url))",
                                                     "fetch.reason": "\(failure.reason.rawValue)",
                                                     "fetch.delay": "\(delay)"])
            self.wait(delay, control: control, on: engine) { waited in
                if waited {
                    self.attempt(request, number: number + 1, bytes: total, control: control, on: engine, gate: gate,
                                 done: done)
                } else {
                    done(FetchResult(result: .failure(FetchFailure(.cancelled, control.stopReason)),
                                     attempts: number, bytesReceived: total))
                }
            }
        }
        if request.url.hasPrefix("file://") {
            readLocal(request, control: control) { result, received in
                finished(AttemptOutcome(result: result.map(Delivery.body), bytes: received))
            }
        } else {
            exchange(request, url: request.url, hop: 0, visited: [], sendHeaders: true,
                     deadline: Monotonic.now() + settings.entryTimeout, bytes: 0, control: control, on: engine,
                     finished: finished)
        }
    }

    /// Calls `then(true)` on `engine`'s thread after `seconds`, or `then(false)` once `control`
    /// stops the downloads first.
    func wait(_ seconds: Double, control: FetchControl, on engine: CurlEngine, then: @escaping @Sendable (Bool) -> Void) {
        let id = engine.newTimerID()
        guard let token = control.register(.timer(id, on: engine)) else {
            then(false)
            return
        }
        engine.schedule(id, in: seconds) { fired in
            control.unregister(token)
            then(fired)
        }
    }
}
