import FoundationEssentials
import Glibc
import WorkerStore
import WorkerSupport

/// One engine of the run's transport for the few exchanges besides its downloads (a bucket's
/// listing, a remote manifest asked for again): each exchange retried as a download is
/// (connection failures, timeouts, 5xx, 408, 429; `--retries`).
public final class SingleEngine: Sendable {
    private let settings: FetchSettings
    private let engines: EngineSet
    private let control = StopRequest()

    /// Starts one engine of `settings`' transport with `width` connections.
    public init(settings: FetchSettings, width: Int = 1) throws(EngineStartFailure) {
        guard let transport = settings.transport else { throw .resources("no network transport was given to this run") }
        self.settings = settings
        engines = try transport.startEngines(shares: [max(1, width)], settings: settings)
    }

    /// Stops the engine; call once, when done.
    public func close() async {
        for engine in engines.engines { await engine.shutdown() }
        engines.cleanup()
    }

    /// One exchange, tried again after a transient failure up to `--retries` times; `handler`
    /// reads the response of an attempt that must end by the deadline it is given.
    public func exchange(_ request: TransferRequest, handler: @escaping @Sendable (Double) -> ResponseHandler) async -> ExchangeReply {
        var attempt = 0
        while true {
            attempt += 1
            var next = TransferRequest(
                url: request.url, headers: request.headers + (request.signing?.headers ?? []),
                deadline: Monotonic.now() + settings.entryTimeout)
            next.method = request.method
            next.signing = request.signing
            next.ssh = request.ssh
            let sent = next
            let deadline = sent.deadline
            let engine = engines.engines[0]
            let reply: ExchangeReply = await withCheckedContinuation { continuation in
                engine.execute { [control] in
                    control.send(sent, handler: handler(deadline), on: engine) { continuation.resume(returning: $0) }
                }
            }
            guard attempt <= settings.retry.retries, Self.isTransient(reply) else { return reply }
            try? await Task.sleep(nanoseconds: UInt64(min(2.0, 0.2 * Double(attempt)) * 1e9))
        }
    }

    /// A GET's body as text (a small document: a listing, through a temporary file in the
    /// cache's `tmp/`, at most `maxSize` bytes), or the reply when it was not a body.
    public func document(_ request: TransferRequest, store: ContentStore, maxSize: Int64) async -> Result<String, DocumentProblem> {
        let url = request.url
        let reply = await exchange(request) { [settings] deadline in
            ResponseHandler(
                store: store, expected: nil, maxSize: min(settings.maxSize, maxSize), conditional: false,
                deadline: deadline, entryTimeout: settings.entryTimeout, url: url, resume: nil, resumeThreshold: .max)
        }
        switch reply.result {
        case .success(.body(let file, _, _)):
            defer { unlink(file.path) }
            guard let data = FileManager.default.contents(atPath: file.path) else {
                return .failure(.failed(FetchFailure(.io, "cannot read the temporary file of \(Redact.url(url))")))
            }
            return .success(String(decoding: data, as: UTF8.self))
        case .success(let outcome): return .failure(.answered(outcome))
        case .failure(let failure): return .failure(.failed(failure))
        }
    }

    /// Why `document` has no text: the server answered otherwise (a status, a redirect), or the
    /// exchange failed.
    public enum DocumentProblem: Error {
        case answered(ExchangeOutcome)
        case failed(FetchFailure)
    }

    private static func isTransient(_ reply: ExchangeReply) -> Bool {
        switch reply.result {
        case .success(.status(let status, _)), .success(.statusAndHeader(let status, _)):
            status >= 500 || status == 408 || status == 429
        case .success: false
        // A handshake refused is the server's way (a plain-HTTP port), not a moment's.
        case .failure(let failure): failure.reason != .cancelled && failure.isTransient && failure.detail != .tls(.handshakeRejected)
        }
    }

    /// Whether the document the cache holds for `url` (an http(s) URL, reached after `--rewrite`)
    /// is unchanged: a conditional GET with its validators answered 304. Anything else — a new
    /// body, a redirect, a failure — is `false`: the caller fetches it the usual way.
    public func isUnchanged(url: String, etag: String?, lastModified: String?, store: ContentStore) async -> Bool {
        let rewrite = settings.locator.rewrite
        // Under --rewrite-strict a location no rule covers is never asked (the usual fetch refuses it).
        guard etag != nil || lastModified != nil, rewrite.rule(for: url) != nil || rewrite.mayRequest(url) else { return false }
        let located = rewrite.apply(url)
        var headers: [String] = []
        if let etag { headers.append("If-None-Match: " + etag) }
        if let lastModified { headers.append("If-Modified-Since: " + lastModified) }
        let request = TransferRequest(url: located, headers: headers, deadline: 0)
        let reply = await exchange(request) { [settings] deadline in
            ResponseHandler(
                store: store, expected: nil, maxSize: settings.maxSize, conditional: true, deadline: deadline,
                entryTimeout: settings.entryTimeout, url: located, resume: nil, resumeThreshold: .max)
        }
        switch reply.result {
        case .success(.notModified): return true
        case .success(.body(let file, _, _)):
            unlink(file.path)
            return false
        default: return false
        }
    }
}
