import WorkerManifest
import WorkerStore
import WorkerSupport

/// One download from its origin as a plain value: the attempts with their retries, the hops of
/// each attempt (redirects we follow ourselves), the resume of a kept part, and the `--max-rps`
/// slot each request takes. Events go in, actions come out; a shell (`OriginDownload`) performs
/// the actions (look a kept part up, take a slot, wait, send an exchange, tell the origin gate)
/// and feeds their answers back. No clock, no I/O: times and random numbers come with the events,
/// so the rules are unit-tested with plain numbers.
///
/// Each event returns actions in order; only the last one can need an answer (`findResume`,
/// `takeSlot`, `wait`, `backOff`, `send`, `admitRetry`) or end the download (`finish`).
struct DownloadMachine: Sendable {
    /// The run's rules for a download.
    struct Rules: Sendable {
        var retry = RetryPolicy()
        /// Longest one attempt (all its hops) may take.
        var entryTimeout = 600.0
        var maxRedirects = 5
        /// `--max-rps`: every request takes its origin's next slot.
        var pacesRequests = false
        /// Attempts are told to an origin gate (a queue's breaker).
        var reportsToGate = false
        /// `--rewrite`: a redirect to a rewritten URL goes where the rule says.
        var rewrite = URLRewrite()
    }

    /// One request to send.
    struct Exchange: Sendable, Equatable {
        let url: String
        /// 0 for the entry's own URL, N for the Nth redirect.
        let hop: Int
        /// `Name: value` lines: the manifest's headers (same origin only), validators, a range.
        let headers: [String]
        /// When the attempt's time is up (monotonic seconds).
        let deadline: Double
        /// The kept part of the body this request asks the rest of.
        let resume: PartialDownloads.Resume?
        /// AWS Signature Version 4 for the request (an `s3://` URL's, same origin only).
        var signing: AWSSigning? = nil
        /// The SSH login of an `sftp://` request.
        var ssh: SSHLogin? = nil
    }

    enum Action: Sendable, Equatable {
        /// Look up a kept part of this URL's body; answer `resumeFound`.
        case findResume
        /// Take the origin's next `--max-rps` slot; answer `slotTaken`.
        case takeSlot(origin: Origin)
        /// Wait for the slot; answer `waited`.
        case wait(seconds: Double)
        /// Wait before the next attempt; answer `waited`.
        case backOff(seconds: Double, after: FailureReason)
        /// Send the request; answer `exchanged`.
        case send(Exchange)
        /// Tell the origin gate how the attempt went (no answer).
        case report(OriginReport)
        /// Ask the origin gate whether another attempt may be made; answer `retryAdmitted`.
        case admitRetry
        /// Tell the origin gate the entry failed for good on an origin problem (no answer).
        case gaveUp
        /// The download is over.
        case finish(Finished)
    }

    /// How the download ended.
    struct Finished: Sendable, Equatable {
        let result: Result<Delivery, FetchFailure>
        let attempts: Int
        /// Body bytes received over all attempts and hops.
        let bytes: Int64
    }

    enum State: Sendable, Equatable {
        case idle
        case findingResume
        case takingSlot(Exchange)
        /// Waiting for the `--max-rps` slot's time.
        case pacing(Exchange)
        case exchanging(Exchange)
        /// Waiting for the origin gate's word on a retry after `delay`.
        case admitting(failure: FetchFailure, delay: Double)
        case backingOff
        case done
    }

    private(set) var state = State.idle
    private let request: FetchRequest
    private let rules: Rules
    /// The attempt under way, from 1.
    private(set) var attempt = 1
    private var received: Int64 = 0
    /// The current attempt's end, its kept part, the URLs its hops visited, and whether the
    /// manifest's headers still go (not after a redirect to another origin).
    private var deadline = 0.0
    private var resume: PartialDownloads.Resume?
    private var visited: Set<String> = []
    private var sendHeaders = true
    /// What the last exchange's response said of its connection.
    private var multiplexed = false
    private var closesConnection = false
    /// Why the downloads were stopped, once known.
    private var stopReason: String?

    init(request: FetchRequest, rules: Rules) {
        self.request = request
        self.rules = rules
    }

    // MARK: - Events

    /// The download starts. `stopped`: why the run stopped, if it did.
    mutating func start(now: Double, stopped: String? = nil) -> [Action] {
        precondition(state == .idle, "a download starts once")
        return beginAttempt(now: now, stopped: stopped)
    }

    /// The answer to `findResume`.
    mutating func resumeFound(_ kept: PartialDownloads.Resume?) -> [Action] {
        guard state == .findingResume else { return [] }
        resume = kept
        return prepare(url: request.url, hop: 0)
    }

    /// The answer to `takeSlot`: seconds until the slot.
    mutating func slotTaken(delay: Double) -> [Action] {
        guard case .takingSlot(let exchange) = state else { return [] }
        if delay > 0 {
            state = .pacing(exchange)
            return [.wait(seconds: delay)]
        }
        state = .exchanging(exchange)
        return [.send(exchange)]
    }

    /// The answer to `wait` or `backOff`: `fired` false when a stop ended the wait first.
    mutating func waited(fired: Bool, now: Double, stopped: String?) -> [Action] {
        switch state {
        case .pacing(let exchange):
            guard fired else { return end(.failure(FetchFailure(.cancelled, stopped ?? Self.cancelled))) }
            state = .exchanging(exchange)
            return [.send(exchange)]
        case .backingOff:
            guard fired else { return end(.failure(FetchFailure(.cancelled, stopped ?? Self.cancelled))) }
            attempt += 1
            return beginAttempt(now: now, stopped: stopped)
        default:
            return []
        }
    }

    /// The answer to `send`. `jitter` (0...1) places a retry's delay in its backoff window; it is
    /// drawn only when a retry is (a random number costs a system call).
    mutating func exchanged(_ reply: ExchangeReply, jitter: @autoclosure () -> Double, stopped: String?) -> [Action] {
        guard case .exchanging(let exchange) = state else { return [] }
        received += reply.bytes
        multiplexed = reply.multiplexed
        closesConnection = reply.closesConnection
        stopReason = stopped
        switch reply.result {
        case .failure(let failure):
            return attemptEnded(.failure(failure), jitter: jitter)
        case .success(.body(let file, let etag, let lastModified)):
            return attemptEnded(
                .success(
                    .body(
                        FetchedBody(
                            temporaryPath: file.path, sha256: file.sha256, size: file.size,
                            etag: etag, lastModified: lastModified))), jitter: jitter)
        case .success(.notModified):
            return attemptEnded(.success(.notModified), jitter: jitter)
        case .success(.status(let status, let retryAfter)):
            return attemptEnded(
                .failure(FetchFailure(.httpStatus, "HTTP \(status)", httpStatus: status, retryAfter: retryAfter)),
                jitter: jitter)
        case .success(.statusAndHeader(let status, _)):
            // A download never asks for a status and a header: a body was due.
            return attemptEnded(
                .failure(FetchFailure(.httpStatus, "HTTP \(status) without a body", httpStatus: status)),
                jitter: jitter)
        case .success(.redirect(let status, let location)):
            // The first hop's URL joins the visited set only when there is a redirect.
            if exchange.hop == 0 { visited = [exchange.url] }
            switch Fetcher.redirectTarget(
                from: exchange.url, location: location, status: status, hop: exchange.hop,
                maxRedirects: rules.maxRedirects, visited: &visited)
            {
            case .failure(let failure):
                return attemptEnded(.failure(failure), jitter: jitter)
            case .success(let target):
                let next = rules.rewrite.apply(target)
                guard rules.rewrite.mayRequest(next) else {
                    return attemptEnded(
                        .failure(
                            FetchFailure(
                                .redirect,
                                "a redirect to \(Redact.url(next)), which no --rewrite rule "
                                    + "covers and no --allow-origin allows (--rewrite-strict)")), jitter: jitter)
                }
                // A server may read `%2E%2E` as `..`: where it leads cannot be checked.
                guard !rules.rewrite.strict || !DotSegments.hasEncoded(in: next) else {
                    return attemptEnded(
                        .failure(
                            FetchFailure(
                                .redirect,
                                "a redirect to \(Redact.url(next)), whose path has an encoded "
                                    + "dot segment (%2E), refused (--rewrite-strict)")), jitter: jitter)
                }
                // Manifest headers (credentials) never follow a redirect to another origin.
                sendHeaders = sendHeaders && Origin.of(next) == request.origin
                return prepare(url: next, hop: exchange.hop + 1)
            }
        }
    }

    /// The answer to `admitRetry`.
    mutating func retryAdmitted(_ decision: RetryDecision) -> [Action] {
        guard case .admitting(let failure, let delay) = state else { return [] }
        switch decision {
        case .giveUp:
            // The origin was given up while this entry waited: no more requests to it.
            return giveUp(.failure(failure))
        case .wait(let seconds):
            return backOff(max(delay, seconds), after: failure)
        case .go:
            return backOff(delay, after: failure)
        }
    }

    // MARK: - Steps

    private static let cancelled = "the run was cancelled"

    private mutating func beginAttempt(now: Double, stopped: String?) -> [Action] {
        if let stopped { return end(.failure(FetchFailure(.cancelled, stopped))) }
        deadline = now + rules.entryTimeout
        visited = []
        sendHeaders = true
        resume = nil
        // A body cut off before: ask for the rest, if it is still the same version.
        if request.isConditional { return prepare(url: request.url, hop: 0) }
        state = .findingResume
        return [.findResume]
    }

    /// The request for one hop; it takes its origin's slot first under `--max-rps`.
    private mutating func prepare(url: String, hop: Int) -> [Action] {
        var lines: [String] = []
        if sendHeaders {
            for header in request.headers { lines.append(header.name + ": " + header.value) }
        }
        if let etag = request.etag { lines.append("If-None-Match: " + etag) }
        if let resume {
            lines.append("Range: bytes=\(resume.offset)-")
            lines.append("If-Range: " + resume.validator)
        }
        if let lastModified = request.lastModified { lines.append("If-Modified-Since: " + lastModified) }
        // Signed like the manifest's headers are sent: to the request's own origin only.
        let signing = sendHeaders ? request.signing : nil
        if let signing { lines += signing.headers }
        // A location's own authorization (a registry's token), like signing: its origin only.
        if sendHeaders, let authorization = request.authorization { lines.append("Authorization: " + authorization) }
        let exchange = Exchange(
            url: url, hop: hop, headers: lines, deadline: deadline, resume: resume, signing: signing,
            ssh: request.ssh)
        if rules.pacesRequests {
            state = .takingSlot(exchange)
            let origin = url == request.url ? request.origin ?? Origin.of(url) : Origin.of(url)
            return [.takeSlot(origin: origin)]
        }
        state = .exchanging(exchange)
        return [.send(exchange)]
    }

    /// An attempt's result: told to the gate, then retried or final.
    private mutating func attemptEnded(_ result: Result<Delivery, FetchFailure>, jitter: () -> Double) -> [Action] {
        var result = result
        if case .failure(let failure) = result, failure.reason == .cancelled, let stopReason {
            // Say why the run stopped it (a deadline names itself).
            result = .failure(FetchFailure(.cancelled, stopReason))
        }
        var actions: [Action] = []
        if rules.reportsToGate, stopReason == nil {
            var report = OriginReport(outcome: .healthy, multiplexed: multiplexed, closesConnections: closesConnection)
            if case .failure(let failure) = result {
                if let problem = FailureClassifier.originProblem(failure) {
                    report.outcome = .unhealthy(problem: problem, retryAfter: failure.retryAfter)
                }
                report.overloaded = failure.httpStatus == 429 || failure.httpStatus == 503
            }
            actions.append(.report(report))
        }
        guard case .failure(let failure) = result, stopReason == nil,
            let delay = rules.retry.delay(after: failure, attempt: attempt, jitter: jitter)
        else {
            return actions + giveUp(result)
        }
        if rules.reportsToGate {
            state = .admitting(failure: failure, delay: delay)
            return actions + [.admitRetry]
        }
        return actions + backOff(delay, after: failure)
    }

    private mutating func backOff(_ seconds: Double, after failure: FetchFailure) -> [Action] {
        state = .backingOff
        return [.backOff(seconds: seconds, after: failure.reason)]
    }

    /// The final result; an origin problem is told to the gate first.
    private mutating func giveUp(_ result: Result<Delivery, FetchFailure>) -> [Action] {
        if rules.reportsToGate, stopReason == nil, case .failure(let failure) = result,
            FailureClassifier.originProblem(failure) != nil
        {
            return [.gaveUp] + end(result)
        }
        return end(result)
    }

    private mutating func end(_ result: Result<Delivery, FetchFailure>) -> [Action] {
        state = .done
        return [.finish(Finished(result: result, attempts: attempt, bytes: received))]
    }
}
