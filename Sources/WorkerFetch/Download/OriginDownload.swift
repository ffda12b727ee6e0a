import Logging
import Synchronization
import WorkerStore
import WorkerSupport

/// Performs a `DownloadMachine`'s actions for one download and feeds their answers back: the
/// kept part from `PartialDownloads`, `--max-rps` slots from `RateLimits`, waits and transfers
/// on the lane's engine, the attempts told to the origin gate. Its events come one at a time (the
/// engine's thread, or the starting thread before the first hand-off to it).
final class OriginDownload: Sendable {
    /// Changed by one event at a time (each event is started by the one before it, directly or
    /// through the engine's locked inbox): the lock is never waited for, and makes that checked
    /// rather than promised. Held only for a transition; its actions are performed after.
    private let machine: Mutex<DownloadMachine>
    private let request: FetchRequest
    private let source: OriginSource
    private let lane: FetchLane
    private let done: @Sendable (DownloadMachine.Finished) -> Void

    init(
        request: FetchRequest, rules: DownloadMachine.Rules, source: OriginSource, lane: FetchLane,
        done: @escaping @Sendable (DownloadMachine.Finished) -> Void
    ) {
        machine = Mutex(DownloadMachine(request: request, rules: rules))
        self.request = request
        self.source = source
        self.lane = lane
        self.done = done
    }

    func start() {
        let stopped = stopReason
        perform(machine.withLock { $0.start(now: Monotonic.now(), stopped: stopped) })
    }

    /// Why the run stopped its downloads, or nil while it has not.
    private var stopReason: String? {
        lane.control.isStopped ? lane.control.stopReason : nil
    }

    private func perform(_ actions: [DownloadMachine.Action]) {
        for action in actions {
            switch action {
            case .findResume:
                let resume = source.store.partials.resume(for: request.url)
                perform(machine.withLock { $0.resumeFound(resume) })
            case .takeSlot(let origin):
                let delay = source.limits?.requestDelay(origin) ?? 0
                perform(machine.withLock { $0.slotTaken(delay: delay) })
            case .wait(let seconds):
                wait(seconds)
            case .backOff(let seconds, let reason):
                source.logger.debug(
                    "retrying",
                    metadata: [
                        "entry.url": "\(Redact.url(request.url))",
                        "fetch.reason": "\(reason.rawValue)", "fetch.delay": "\(seconds)",
                    ])
                wait(seconds)
            case .send(let exchange):
                send(exchange)
            case .report(let report):
                if let gate = lane.gate, let origin = request.origin { gate.record(origin, report) }
            case .admitRetry:
                let decision = lane.gate.flatMap { gate in request.origin.map(gate.admitRetry) } ?? .go
                perform(machine.withLock { $0.retryAdmitted(decision) })
            case .gaveUp:
                if let gate = lane.gate, let origin = request.origin { gate.entryGaveUp(origin) }
            case .finish(let finished):
                done(finished)
            }
        }
    }

    private func wait(_ seconds: Double) {
        lane.control.wait(seconds, on: lane.engine) { fired in
            let stopped = self.stopReason
            self.perform(self.machine.withLock { $0.waited(fired: fired, now: Monotonic.now(), stopped: stopped) })
        }
    }

    /// One request through the engine's transfer and its `ResponseHandler`, cancelled by a stop.
    private func send(_ exchange: DownloadMachine.Exchange) {
        // The settings read field by field: a copy of them all is a dozen retains a request.
        let handler = ResponseHandler(
            store: source.store, expected: request.expected, maxSize: source.settings.maxSize,
            conditional: request.isConditional, deadline: exchange.deadline,
            entryTimeout: source.settings.entryTimeout, url: request.url, resume: exchange.resume,
            resumeThreshold: source.settings.resumeThreshold)
        var sent = TransferRequest(
            url: exchange.url, headers: exchange.headers, deadline: exchange.deadline,
            limits: source.limits, meter: source.meter, origin: request.origin)
        sent.signing = exchange.signing
        sent.ssh = exchange.ssh
        // Stopped before it was sent: it ends as cancelled, without a request.
        lane.control.send(sent, handler: handler, on: lane.engine) { reply in
            let stopped = self.stopReason
            self.perform(self.machine.withLock { $0.exchanged(reply, jitter: Double.random(in: 0...1), stopped: stopped) })
        }
    }
}

extension OriginSource {
    /// One URL with its retries (or one attempt), redirects and resume.
    func download(
        _ request: FetchRequest, retries: Bool, lane: FetchLane,
        done: @escaping @Sendable (DownloadMachine.Finished) -> Void
    ) {
        let rules = DownloadMachine.Rules(
            retry: retries ? settings.retry : RetryPolicy(retries: 0),
            entryTimeout: settings.entryTimeout,
            maxRedirects: settings.maxRedirects,
            pacesRequests: limits?.requestsPerSecond != nil,
            reportsToGate: lane.gate != nil,
            rewrite: settings.locator.rewrite)
        OriginDownload(request: request, rules: rules, source: self, lane: lane, done: done).start()
    }
}
