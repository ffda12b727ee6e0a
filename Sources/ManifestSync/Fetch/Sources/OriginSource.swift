import FoundationEssentials
import Glibc
import Logging

/// The URL's own server over HTTP(S) (through a fetch engine: `CurlEngine`): one download with
/// its retries, told to the origin gate, and its redirects (`OriginSource+Exchange`). The origin
/// never misses: a URL that is not there is a failure.
final class OriginSource: ContentSource {
    let store: ContentStore
    let settings: FetchSettings
    let logger: Logger
    let limits: RateLimits?
    /// Heads and body bytes as the transfers go (shared with the run: the window, progress).
    let meter: TransferMeter

    init(store: ContentStore, settings: FetchSettings, logger: Logger, limits: RateLimits?, meter: TransferMeter) {
        self.store = store
        self.settings = settings
        self.logger = logger
        self.limits = limits
        self.meter = meter
    }

    var kind: SourceKind { .origin }

    func serves(_ request: FetchRequest) -> Bool {
        request.origin != nil
    }

    /// The retry loop: an attempt's outcome is told to the origin gate, and a transient failure
    /// is tried again after the retry policy's delay (or the origin's pause), on the engine's thread.
    func fetch(_ request: FetchRequest, lane: FetchLane, done: @escaping @Sendable (SourceOutcome) -> Void) {
        attempt(request, number: 1, bytes: 0, control: lane.control, on: lane.engine,
                gate: request.origin.flatMap { origin in lane.gate.map { (origin, $0) } }, done: done)
    }

    /// One attempt's result and the body bytes it received.
    struct AttemptOutcome: Sendable {
        let result: Result<Delivery, FetchFailure>
        let bytes: Int64
        /// The last response came over HTTP/2.
        var multiplexed = false
        /// The server closed the connection after the last response.
        var closesConnection = false
    }

    private func attempt(_ request: FetchRequest, number: Int, bytes: Int64, control: FetchControl, on engine: CurlEngine,
                         gate: (origin: String, gate: any OriginGate)?, done: @escaping @Sendable (SourceOutcome) -> Void) {
        if control.isStopped {
            done(SourceOutcome(.failure(FetchFailure(.cancelled, control.stopReason)), attempts: number, bytes: bytes))
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
                done(SourceOutcome(outcome.result, attempts: number, bytes: total))
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
            control.wait(delay, on: engine) { waited in
                if waited {
                    self.attempt(request, number: number + 1, bytes: total, control: control, on: engine, gate: gate,
                                 done: done)
                } else {
                    done(SourceOutcome(.failure(FetchFailure(.cancelled, control.stopReason)), attempts: number, bytes: total))
                }
            }
        }
        exchange(request, url: request.url, hop: 0, visited: [], sendHeaders: true,
                 deadline: Monotonic.now() + settings.entryTimeout, bytes: 0, control: control, on: engine,
                 finished: finished)
    }
}
