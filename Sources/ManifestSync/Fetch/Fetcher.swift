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
    /// PEM files of certificate authorities to trust besides the system's (an internal CA).
    public var caCertificates: [String] = []

    public init() {}
}

/// One download to make: where from, what it must hash to, what to send.
struct FetchRequest: Sendable {
    let url: String
    let expected: ContentHash?
    let headers: [RequestHeader]
    /// For `file://` entries: the manifest folder the file must stay inside (symlinks resolved).
    let localRoot: String?
    /// The stored version's validators: sent as If-None-Match / If-Modified-Since, so the origin
    /// can answer 304 Not Modified without a body.
    var etag: String? = nil
    var lastModified: String? = nil

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
    private let store: ContentStore
    private let settings: FetchSettings
    private let logger: Logger

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
        client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        self.store = store
        self.settings = settings
        self.logger = logger
    }

    func shutdown() async {
        try? await client.shutdown()
    }

    /// Downloads, retrying transient failures, and installs the verified body as an object.
    func fetch(_ request: FetchRequest) async -> FetchResult {
        var attempts = 0
        var bytes: Int64 = 0
        while true {
            attempts += 1
            let outcome: Result<Delivery, FetchFailure>
            if Task.isCancelled {
                outcome = .failure(FetchFailure(.cancelled, "the run was cancelled"))
            } else if request.url.hasPrefix("file://") {
                outcome = readLocal(request, bytes: &bytes).map(Delivery.body)
            } else {
                outcome = await download(request, bytes: &bytes)
            }
            guard case .failure(let failure) = outcome,
                  !Task.isCancelled,
                  let delay = settings.retry.delay(after: failure, attempt: attempts)
            else {
                return FetchResult(result: outcome, attempts: attempts, bytesReceived: bytes)
            }
            logger.debug("retrying", metadata: ["entry.url": "\(Redact.url(request.url))",
                                                "fetch.reason": "\(failure.reason.rawValue)",
                                                "fetch.delay": "\(delay)"])
            try? await Task.sleep(nanoseconds: UInt64(delay * 1e9))
        }
    }

    // MARK: - HTTP

    private func download(_ request: FetchRequest, bytes: inout Int64) async -> Result<Delivery, FetchFailure> {
        let deadline = NIODeadline.now() + .milliseconds(Int64(settings.entryTimeout * 1000))
        var current = request.url
        var visited: Set<String> = [current]
        var sendHeaders = true
        let origin = Self.origin(of: current)
        for hop in 0...settings.maxRedirects {
            var headers = HTTPHeaders()
            headers.add(name: "User-Agent", value: "worker/1")
            if sendHeaders {
                for header in request.headers { headers.add(name: header.name, value: header.value) }
            }
            if let etag = request.etag { headers.add(name: "If-None-Match", value: etag) }
            if let lastModified = request.lastModified { headers.add(name: "If-Modified-Since", value: lastModified) }
            let http: HTTPClient.Request
            do {
                http = try HTTPClient.Request(url: current, headers: headers)
            } catch {
                return .failure(Self.classify(error))
            }
            let delegate = DownloadDelegate(store: store, expected: request.expected, maxSize: settings.maxSize,
                                            conditional: request.isConditional, deadline: deadline,
                                            entryTimeout: settings.entryTimeout)
            let task = client.execute(request: http, delegate: delegate, deadline: deadline)
            let outcome: ExchangeOutcome
            do {
                outcome = try await withTaskCancellationHandler {
                    try await task.futureResult.get()
                } onCancel: {
                    task.cancel()
                }
            } catch {
                bytes += delegate.bytesReceived
                return .failure(Self.classify(error))
            }
            bytes += delegate.bytesReceived
            switch outcome {
            case .body(let file, let etag, let lastModified):
                return .success(.body(FetchedBody(temporaryPath: file.path, sha256: file.sha256, size: file.size,
                                                  etag: etag, lastModified: lastModified)))
            case .notModified:
                return .success(.notModified)
            case .status(let status, let retryAfter):
                return .failure(FetchFailure(.httpStatus, "HTTP \(status)", httpStatus: status, retryAfter: retryAfter))
            case .redirect(let status, let location):
                switch Self.redirectTarget(from: current, location: location, status: status, hop: hop,
                                           maxRedirects: settings.maxRedirects, visited: &visited) {
                case .failure(let failure): return .failure(failure)
                case .success(let next):
                    if Self.origin(of: next) != origin { sendHeaders = false }
                    current = next
                }
            }
        }
        return .failure(FetchFailure(.redirect, "more than \(settings.maxRedirects) redirects"))
    }

    /// Where a redirect leads, or why it is refused: no Location, too many hops, a loop, a scheme
    /// other than http(s), or a downgrade from https to http.
    static func redirectTarget(from current: String, location: String?, status: Int, hop: Int, maxRedirects: Int,
                               visited: inout Set<String>) -> Result<String, FetchFailure> {
        guard let location, !location.isEmpty else {
            return .failure(FetchFailure(.redirect, "HTTP \(status) redirect without a Location"))
        }
        guard hop < maxRedirects else {
            return .failure(FetchFailure(.redirect, "more than \(maxRedirects) redirects"))
        }
        guard let base = URL(string: current), let target = URL(string: location, relativeTo: base)?.absoluteURL,
              let scheme = target.scheme?.lowercased()
        else {
            return .failure(FetchFailure(.redirect, "redirect to an invalid Location"))
        }
        guard scheme == "http" || scheme == "https" else {
            return .failure(FetchFailure(.scheme, "redirect to a '\(Redact.short(scheme))' URL refused (only http and https)"))
        }
        if base.scheme?.lowercased() == "https" && scheme == "http" {
            return .failure(FetchFailure(.redirect, "redirect from https to http refused"))
        }
        let next = target.absoluteString
        guard visited.insert(next).inserted else {
            return .failure(FetchFailure(.redirect, "redirect loop at \(Redact.url(next))"))
        }
        return .success(next)
    }

    // MARK: - Local files

    private func readLocal(_ request: FetchRequest, bytes: inout Int64) -> Result<FetchedBody, FetchFailure> {
        let path = String(request.url.dropFirst("file://".count))
        guard let real = realpath(path, nil) else {
            return .failure(FetchFailure(.io, "cannot read \(path): \(String(cString: strerror(errno)))"))
        }
        let resolved = String(cString: real)
        free(real)
        if let root = request.localRoot, !resolved.hasPrefix(root + "/") {
            return .failure(FetchFailure(.io, "\(path) resolves outside the manifest's folder"))
        }
        let input = open(resolved, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else {
            return .failure(FetchFailure(.io, "cannot read \(path): \(String(cString: strerror(errno)))"))
        }
        defer { close(input) }
        var info = stat()
        guard fstat(input, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            return .failure(FetchFailure(.io, "\(path) is not a regular file"))
        }
        guard Int64(info.st_size) <= settings.maxSize else {
            return .failure(FetchFailure(.tooLarge, "\(info.st_size) bytes exceeds the limit of \(settings.maxSize) bytes"))
        }
        let file: (fd: Int32, path: String)
        do { file = try store.makeTemporaryFile() } catch { return .failure(error) }
        var sink = BodySink(fd: file.fd, path: file.path, expected: request.expected, maxSize: settings.maxSize)
        let copied = FileChunks.read(input, path: path) { chunk in
            bytes += Int64(chunk.count)
            return sink.write(chunk)
        }
        if case .failure(let failure) = copied {
            sink.discard()
            return .failure(failure)
        }
        return finish(&sink).map {
            FetchedBody(temporaryPath: $0.path, sha256: $0.sha256, size: $0.size, etag: nil, lastModified: nil)
        }
    }

    // MARK: - Verify

    /// A closed temporary file whose bytes matched the expected hash.
    struct VerifiedFile {
        let path: String
        let sha256: String
        let size: Int64
    }

    private func finish(_ sink: inout BodySink) -> Result<VerifiedFile, FetchFailure> {
        sink.close().map { VerifiedFile(path: sink.path, sha256: $0.sha256, size: sink.size) }
    }

    // MARK: - Errors

    static func classify(_ error: any Error) -> FetchFailure {
        if let failure = error as? FetchFailure { return failure }
        if error is CancellationError { return FetchFailure(.cancelled, "the run was cancelled") }
        if let client = error as? HTTPClientError {
            switch client {
            case .connectTimeout, .readTimeout, .deadlineExceeded, .tlsHandshakeTimeout, .getConnectionFromPoolTimeout:
                return FetchFailure(.timeout, "\(client.shortDescription)")
            case .cancelled:
                return FetchFailure(.cancelled, "the run was cancelled")
            default:
                return FetchFailure(.connection, "\(client.shortDescription)")
            }
        }
        if let tls = error as? NIOSSLError, case .handshakeFailed(let cause) = tls {
            let untrusted = "\(cause)".contains("CERTIFICATE_VERIFY_FAILED")
            return FetchFailure(.connection, untrusted
                ? "TLS: the server's certificate is not trusted (a private CA can be added with --ca-cert)"
                : "TLS handshake failed", isPermanent: untrusted)
        }
        if let parser = error as? HTTPParserError, parser == .invalidEOFState {
            return FetchFailure(.connection, "truncated body: the connection closed before the declared length arrived")
        }
        if let channel = error as? ChannelError, channel == .connectTimeout(.zero) {
            return FetchFailure(.timeout, "connect timeout")
        }
        return FetchFailure(.connection, Redact.short(String(describing: error), limit: 160))
    }

    static func parseRetryAfter(_ value: String) -> Double? {
        if let seconds = Double(value.trimmingCharacters(in: .whitespaces)) { return seconds }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: value).map { $0.timeIntervalSinceNow }
    }

    /// scheme://host:port, lowercased: what "same origin" compares.
    static func origin(of url: String) -> String {
        guard let parsed = URL(string: url) else { return url }
        let scheme = parsed.scheme?.lowercased() ?? ""
        let port = parsed.port ?? (scheme == "https" ? 443 : 80)
        return "\(scheme)://\(parsed.host?.lowercased() ?? ""):\(port)"
    }
}
