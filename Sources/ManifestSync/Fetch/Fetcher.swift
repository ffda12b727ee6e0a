import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// Downloads bodies into the content store: streamed to `tmp/` while hashed, verified, then
/// renamed to their object name. One `HTTPClient` per run, its pool sized to the concurrency.
final class Fetcher: Sendable {
    let client: HTTPClient
    let store: ContentStore
    let settings: FetchSettings
    let logger: Logger
    let limits: RateLimits?
    /// Origins that answered over HTTP/2. Their requests ask for a connection on the event loop
    /// the response is handled on: the pool then keeps one HTTP/2 connection per loop, and no
    /// body chunk crosses threads. (HTTP/1.1 requests only prefer that loop, so the pool stays
    /// within `--jobs` connections.)
    let multiplexedOrigins = Mutex<Set<String>>([])

    init(store: ContentStore, settings: FetchSettings, logger: Logger) {
        var configuration = HTTPClient.Configuration()
        configuration.decompression = .disabled
        // No tracing spans: nothing here reads them, and starting one costs every request.
        configuration.tracing.tracer = nil
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
        // repeat it silently until the connect timeout, for every attempt.
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
        attempt(request, number: 1, bytes: 0, on: loop, control: control,
                gate: request.origin.flatMap { origin in gate.map { (origin, $0) } }, promise: promise)
        return promise.futureResult
    }

    /// A closed temporary file whose bytes matched the expected hash.
    struct VerifiedFile {
        let path: String
        let sha256: String
        let size: Int64
    }
}
