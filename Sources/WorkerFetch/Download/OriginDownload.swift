import Logging
import WorkerStore
import WorkerSupport

/// Performs a `DownloadMachine`'s actions for one download and feeds their answers back: the
/// kept part from `PartialDownloads`, `--max-rps` slots from `RateLimits`, waits and transfers
/// on the lane's engine, the attempts told to the origin gate. Its events come one at a time (the
/// engine's thread, or the starting thread before the first hand-off to it).
final class OriginDownload: @unchecked Sendable {
    // @unchecked: `machine` is changed by one event at a time; each event is started by the one
    // before it (directly, or through the engine's locked inbox), so they never overlap.
    private var machine: DownloadMachine
    private let request: FetchRequest
    private let source: OriginSource
    private let lane: FetchLane
    private let done: @Sendable (DownloadMachine.Finished) -> Void

    init(request: FetchRequest, rules: DownloadMachine.Rules, source: OriginSource, lane: FetchLane,
         done: @escaping @Sendable (DownloadMachine.Finished) -> Void) {
        machine = DownloadMachine(request: request, rules: rules)
        self.request = request
        self.source = source
        self.lane = lane
        self.done = done
    }

    func start() {
        perform(machine.start(now: Monotonic.now(), stopped: stopReason))
    }

    /// Why the run stopped its downloads, or nil while it has not.
    private var stopReason: String? {
        lane.control.isStopped ? lane.control.stopReason : nil
    }

    private func perform(_ actions: [DownloadMachine.Action]) {
        for action in actions {
            switch action {
            case .findResume:
                perform(machine.resumeFound(source.store.partials.resume(for: request.url)))
            case .takeSlot(let origin):
                perform(machine.slotTaken(delay: source.limits?.requestDelay(origin) ?? 0))
            case .wait(let seconds):
                wait(seconds)
            case .backOff(let seconds, let reason):
                source.logger.debug("retrying", metadata: ["entry.url": "\(Redact.url(request.url))",
                                                           "fetch.reason": "\(reason.rawValue)", "fetch.delay": "\(seconds)"])
                wait(seconds)
            case .send(let exchange):
                send(exchange)
            case .report(let report):
                if let gate = lane.gate, let origin = request.origin { gate.record(origin, report) }
            case .admitRetry:
                let decision = lane.gate.flatMap { gate in request.origin.map(gate.admitRetry) } ?? .go
                perform(machine.retryAdmitted(decision))
            case .gaveUp:
                if let gate = lane.gate, let origin = request.origin { gate.entryGaveUp(origin) }
            case .finish(let finished):
                done(finished)
            }
        }
    }

    private func wait(_ seconds: Double) {
        lane.control.wait(seconds, on: lane.engine) { fired in
            self.perform(self.machine.waited(fired: fired, now: Monotonic.now(), stopped: self.stopReason))
        }
    }

    /// One request through the engine's transfer and its `ResponseHandler`, cancelled by a stop.
    private func send(_ exchange: DownloadMachine.Exchange) {
        let settings = source.settings
        let handler = ResponseHandler(store: source.store, expected: request.expected, maxSize: settings.maxSize,
                                      conditional: request.isConditional, deadline: exchange.deadline,
                                      entryTimeout: settings.entryTimeout, url: request.url, resume: exchange.resume,
                                      resumeThreshold: settings.resumeThreshold)
        var sent = TransferRequest(url: exchange.url, headers: exchange.headers, deadline: exchange.deadline,
                                   limits: source.limits, meter: source.meter, origin: request.origin)
        sent.signing = exchange.signing
        // Stopped before it was sent: it ends as cancelled, without a request.
        lane.control.send(sent, handler: handler, on: lane.engine) { reply in
            self.perform(self.machine.exchanged(reply, jitter: Double.random(in: 0...1), stopped: self.stopReason))
        }
    }
}
