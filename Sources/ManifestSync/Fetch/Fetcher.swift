import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// Limits and timeouts of the fetch stage.
public struct FetchSettings: Sendable {
    public var jobs = 16
    public var retry = RetryPolicy()
    public var connectTimeout = 10.0
    /// Longest silence while reading a body.
    public var readTimeout = 30.0
    /// Longest one request (head and body) may take.
    public var entryTimeout = 600.0
    public var maxSize: Int64 = 256 << 20
    public var maxRedirects = 5
    /// Bodies cut off after this many bytes are kept and resumed with `Range` + `If-Range`.
    public var resumeThreshold: Int64 = 1 << 20
    /// PEM files of certificate authorities to trust besides the system's (an internal CA).
    public var caCertificates: [String] = []
    /// Body bytes per second for the whole run (`--limit-rate`); nil: no limit.
    public var limitRate: Int64?
    /// Requests per second to each origin (`--max-rps`); nil: no limit.
    public var maxRequestsPerSecond: Double?

    public init() {}
}

/// One download to make: where from, what it must hash to, what to send. A class: the steps of
/// a download (callbacks on the event loops) share it instead of copying its strings.
final class FetchRequest: Sendable {
    let url: String
    let expected: ContentHash?
    let headers: [RequestHeader]
    /// For `file://` entries: the manifest folder the file must stay inside (symlinks resolved).
    let localRoot: String?
    /// The stored version's validators: sent as If-None-Match / If-Modified-Since, so the origin
    /// can answer 304 Not Modified without a body.
    let etag: String?
    let lastModified: String?

    init(url: String, expected: ContentHash?, headers: [RequestHeader], localRoot: String?,
         etag: String? = nil, lastModified: String? = nil) {
        self.url = url
        self.expected = expected
        self.headers = headers
        self.localRoot = localRoot
        self.etag = etag
        self.lastModified = lastModified
    }

    var isConditional: Bool { etag != nil || lastModified != nil }
}

/// What a successful download delivered.
enum Delivery: Sendable {
    case body(FetchedBody)
    /// 304 to a conditional request: the stored version is current.
    case notModified
}

/// A body that was received completely and matched its hash, waiting in `tmp/` to be installed
/// as an object when its batch commits.
struct FetchedBody: Sendable {
    let temporaryPath: String
    let sha256: String
    let size: Int64
    let etag: String?
    let lastModified: String?
}

/// The outcome of a download with its retries.
struct FetchResult: Sendable {
    let result: Result<Delivery, FetchFailure>
    let attempts: Int
    /// Body bytes received over all attempts.
    let bytesReceived: Int64
}

/// Downloads bodies into the content store: streamed to `tmp/` while hashed, verified, then
/// renamed to their object name. One `HTTPClient` per run, its pool sized to the concurrency.
final class Fetcher: Sendable {
    private let client: HTTPClient
    let store: ContentStore
    let settings: FetchSettings
    private let logger: Logger
    private let limits: RateLimits?

    init(store: ContentStore, settings: FetchSettings, logger: Logger) {
        var configuration = HTTPClient.Configuration()
        configuration.decompression = .disabled
        if !settings.caCertificates.isEmpty {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.additionalTrustRoots = settings.caCertificates.map { .file($0) }
            configuration.tlsConfiguration = tls
        }
        // Redirects are followed here, not by the client: https→http is refused, credentials
        // are dropped across origins, and every hop is checked.
        configuration.redirectConfiguration = .disallow
        configuration.timeout = .init(connect: .milliseconds(Int64(settings.connectTimeout * 1000)),
                                      read: .milliseconds(Int64(settings.readTimeout * 1000)))
        configuration.connectionPool = .init(idleTimeout: .seconds(60),
                                             concurrentHTTP1ConnectionsPerHostSoftLimit: max(1, settings.jobs))
        // A refused connect or a rejected handshake is reported at once and retried by our own
        // policy (with backoff, and counted by the origin breaker); the pool's own retries would
        // repeat it silently until the connect timeout (41 s per refused entry with 4 attempts).
        configuration.connectionPool.retryConnectionEstablishment = false
        client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        self.store = store
        self.settings = settings
        self.logger = logger
        limits = RateLimits(bytesPerSecond: settings.limitRate, requestsPerSecond: settings.maxRequestsPerSecond)
    }

    /// A loop of the client's group, for timers that belong with the downloads.
    var eventLoop: any EventLoop { client.eventLoopGroup.next() }

    func shutdown() async {
        try? await client.shutdown()
    }

    /// Downloads one request with its retries (for callers outside a queue: `verify --repair`).
    /// Cancelling the calling task cancels the download.
    func fetch(_ request: FetchRequest) async -> FetchResult {
        let control = FetchControl()
        let future = fetch(request, control: control)
        return await withTaskCancellationHandler {
            (try? await future.get())
                ?? FetchResult(result: .failure(FetchFailure(.cancelled, "the run was cancelled")), attempts: 1,
                               bytesReceived: 0)
        } onCancel: {
            control.stop()
        }
    }

    /// Downloads one request, retrying transient failures, entirely on the client's event loops:
    /// the response is hashed and written where it arrives and the next step (a redirect hop, a
    /// retry timer) starts from the same loop. The future never fails; `control.stop()` ends
    /// the download as `cancelled`.
    /// With a `gate`, every attempt's outcome is told to the origin breaker, and a retry waits
    /// for the origin's pause or is not made once the origin is given up.
    func fetch(_ request: FetchRequest, control: FetchControl, gate: (any OriginGate)? = nil) -> EventLoopFuture<FetchResult> {
        let loop = client.eventLoopGroup.any()
        let promise = loop.makePromise(of: FetchResult.self)
        let origin = gate == nil || request.url.hasPrefix("file://") ? nil : Self.origin(of: request.url)
        attempt(request, number: 1, bytes: 0, on: loop, control: control,
                gate: origin.flatMap { origin in gate.map { (origin, $0) } }, promise: promise)
        return promise.futureResult
    }

    /// One attempt's result and the body bytes it received.
    private struct AttemptOutcome: Sendable {
        let result: Result<Delivery, FetchFailure>
        let bytes: Int64
    }

    private func attempt(_ request: FetchRequest, number: Int, bytes: Int64, on loop: any EventLoop,
                         control: FetchControl, gate: (origin: String, gate: any OriginGate)?,
                         promise: EventLoopPromise<FetchResult>) {
        if control.isStopped {
            promise.succeed(FetchResult(result: .failure(FetchFailure(.cancelled, control.stopReason)),
                                        attempts: number, bytesReceived: bytes))
            return
        }
        let finished: @Sendable (AttemptOutcome) -> Void = { received in
            let outcome: AttemptOutcome
            if case .failure(let failure) = received.result, failure.reason == .cancelled, control.isStopped {
                // Say why the run stopped it (a deadline names itself).
                outcome = AttemptOutcome(result: .failure(FetchFailure(.cancelled, control.stopReason)), bytes: received.bytes)
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
                let retryAfter: Double? = if case .failure(let failure) = outcome.result { failure.retryAfter } else { nil }
                gate.gate.record(gate.origin, problem.map { .unhealthy(problem: $0, retryAfter: retryAfter) } ?? .healthy)
            }
            let giveUp = { @Sendable in
                if let gate, problem != nil, !control.isStopped { gate.gate.entryGaveUp(gate.origin) }
                promise.succeed(FetchResult(result: outcome.result, attempts: number, bytesReceived: total))
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
            let wait = loop.scheduleTask(in: .nanoseconds(Int64(delay * 1e9))) {}
            let token = control.register(.timer(wait))
            wait.futureResult.whenComplete { waited in
                control.unregister(token)
                if case .success = waited {
                    self.attempt(request, number: number + 1, bytes: total, on: loop, control: control, gate: gate,
                                 promise: promise)
                } else {
                    promise.succeed(FetchResult(result: .failure(FetchFailure(.cancelled, control.stopReason)),
                                                attempts: number, bytesReceived: total))
                }
            }
        }
        if request.url.hasPrefix("file://") {
            readLocal(request) { result, received in
                finished(AttemptOutcome(result: result.map(Delivery.body), bytes: received))
            }
        } else {
            let deadline = NIODeadline.now() + .milliseconds(Int64(settings.entryTimeout * 1000))
            exchange(request, url: request.url, hop: 0, visited: [], sendHeaders: true, deadline: deadline,
                     bytes: 0, on: loop, control: control, finished: finished)
        }
    }

    // MARK: - HTTP

    /// One request and, through redirects we follow ourselves, the hops after it.
    private func exchange(_ request: FetchRequest, url current: String, hop: Int, visited: Set<String>,
                          sendHeaders: Bool, deadline: NIODeadline, bytes: Int64, on loop: any EventLoop,
                          control: FetchControl, finished: @escaping @Sendable (AttemptOutcome) -> Void) {
        var headers = HTTPHeaders()
        headers.add(name: "User-Agent", value: "worker/1")
        if sendHeaders {
            for header in request.headers { headers.add(name: header.name, value: header.value) }
        }
        if let etag = request.etag { headers.add(name: "If-None-Match", value: etag) }
        // A body cut off before: ask for the rest, if it is still the same version.
        let resume = request.isConditional ? nil : store.partials.resume(for: request.url)
        if let resume {
            headers.add(name: "Range", value: "bytes=\(resume.offset)-")
            headers.add(name: "If-Range", value: resume.validator)
        }
        if let lastModified = request.lastModified { headers.add(name: "If-Modified-Since", value: lastModified) }
        let http: HTTPClient.Request
        do {
            http = try HTTPClient.Request(url: current, headers: headers)
        } catch {
            finished(AttemptOutcome(result: .failure(FailureClassifier.classify(error)), bytes: bytes))
            return
        }
        // --max-rps: this request takes its origin's next slot, waiting for it if need be.
        if let limits, case let wait = limits.requestDelay(Self.origin(of: current)), wait > 0 {
            let timer = loop.scheduleTask(in: .nanoseconds(Int64(wait * 1e9))) {}
            let token = control.register(.timer(timer))
            timer.futureResult.whenComplete { waited in
                control.unregister(token)
                guard case .success = waited else {
                    finished(AttemptOutcome(result: .failure(FetchFailure(.cancelled, control.stopReason)), bytes: bytes))
                    return
                }
                self.send(http, request, url: current, hop: hop, visited: visited, sendHeaders: sendHeaders,
                          deadline: deadline, bytes: bytes, resume: resume, on: loop, control: control, finished: finished)
            }
            return
        }
        send(http, request, url: current, hop: hop, visited: visited, sendHeaders: sendHeaders, deadline: deadline,
             bytes: bytes, resume: resume, on: loop, control: control, finished: finished)
    }

    /// Sends one request and handles its outcome (a redirect continues with `exchange`).
    private func send(_ http: HTTPClient.Request, _ request: FetchRequest, url current: String, hop: Int, visited: Set<String>,
                      sendHeaders: Bool, deadline: NIODeadline, bytes: Int64, resume: PartialDownloads.Resume?,
                      on loop: any EventLoop, control: FetchControl,
                      finished: @escaping @Sendable (AttemptOutcome) -> Void) {
        let delegate = DownloadDelegate(store: store, expected: request.expected, maxSize: settings.maxSize,
                                        conditional: request.isConditional, deadline: deadline,
                                        entryTimeout: settings.entryTimeout, limits: limits, url: request.url,
                                        resume: resume, resumeThreshold: settings.resumeThreshold)
        // The delegate runs on `loop`: when called from one of the client's loops that is the
        // current one, so a finished download and the next one share a thread.
        let task = client.execute(request: http, delegate: delegate, eventLoop: .delegate(on: loop), deadline: deadline)
        let token = control.register(.request(task))
        task.futureResult.whenComplete { completion in
            control.unregister(token)
            let received = bytes + delegate.bytesReceived
            let outcome: ExchangeOutcome
            switch completion {
            case .failure(let error):
                finished(AttemptOutcome(result: .failure(FailureClassifier.classify(error)), bytes: received))
                return
            case .success(let value):
                outcome = value
            }
            switch outcome {
            case .body(let file, let etag, let lastModified):
                finished(AttemptOutcome(result: .success(.body(FetchedBody(
                    temporaryPath: file.path, sha256: file.sha256, size: file.size,
                    etag: etag, lastModified: lastModified))), bytes: received))
            case .notModified:
                finished(AttemptOutcome(result: .success(.notModified), bytes: received))
            case .status(let status, let retryAfter):
                finished(AttemptOutcome(result: .failure(FetchFailure(.httpStatus, "HTTP \(status)", httpStatus: status,
                                                                      retryAfter: retryAfter)), bytes: received))
            case .redirect(let status, let location):
                // The first hop's URL joins the visited set only when there is a redirect.
                var visited = hop == 0 ? [current] : visited
                switch Self.redirectTarget(from: current, location: location, status: status, hop: hop,
                                           maxRedirects: self.settings.maxRedirects, visited: &visited) {
                case .failure(let failure):
                    finished(AttemptOutcome(result: .failure(failure), bytes: received))
                case .success(let next):
                    // Manifest headers (credentials) never follow a redirect to another origin.
                    self.exchange(request, url: next, hop: hop + 1, visited: visited,
                                  sendHeaders: sendHeaders && Self.origin(of: next) == Self.origin(of: request.url),
                                  deadline: deadline, bytes: received, on: loop, control: control, finished: finished)
                }
            }
        }
    }

    /// A closed temporary file whose bytes matched the expected hash.
    struct VerifiedFile {
        let path: String
        let sha256: String
        let size: Int64
    }
}
