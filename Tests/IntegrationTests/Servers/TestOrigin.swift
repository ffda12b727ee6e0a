import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A real HTTP origin on 127.0.0.1 (port 0) for integration tests: serves in-memory files, counts
/// every request by path, and has routes for each failure mode.
///
/// | route | behaviour |
/// |---|---|
/// | a path given to `set(_:_:)` | those bytes, with an ETag |
/// | `/status/CODE` | answers CODE |
/// | `/flaky/N/CODE/PATH[?retry-after=S]` | the first N requests answer CODE, later ones serve PATH |
/// | `/truncate/PATH` | declares 100 bytes more than it sends, then closes |
/// | `/drip/MS/PATH` | sends PATH one byte every MS milliseconds |
/// | `/trickle/BYTES/MS/PATH` | a GET gets PATH, BYTES every MS milliseconds; a HEAD 404 and a PUT 201 at once (a tier that drips) |
/// | `/stall/PATH` | sends the head and half the body, then nothing |
/// | `/endless` | a chunked body that never ends (until the client goes, or 1 GiB) |
/// | `/reset/PATH` | closes the connection without answering |
/// | `/redirect/N/PATH` | N redirects, then PATH |
/// | `/loop/a`, `/loop/b` | redirect to each other |
/// | `/goto?to=URL` | redirects to URL |
/// | `/gen/KEY` | `TestOrigin.generated(KEY)`: 1–11 KB derived from KEY |
/// | `/slow/MS/ROUTE` | waits MS milliseconds, then answers as ROUTE |
/// | `/slowwrite/MS/ROUTE` | answers a GET or HEAD as ROUTE at once, anything else after MS milliseconds |
/// | `/close/PATH` | PATH with `Connection: close`, then closes (an HTTP/1.0-style server) |
/// | `/encoded/PATH` | PATH's bytes labelled `Content-Encoding: gzip` (nobody asked for it) |
/// | `/cut/PERCENT/PATH` | the first request gets PERCENT % of PATH and a closed connection; later ones PATH |
///
/// Files given to `set(_:_:)` answer `Range: bytes=N-` with a 206 when `If-Range` (if sent)
/// matches their ETag, as nginx does.
/// | anything else | 404 |
final class TestOrigin: Sendable {
    struct State {
        var files: [String: [UInt8]] = [:]
        var hits: [String: Int] = [:]
        var headers: [String: [String: String]] = [:]
        var total = 0
        var bodyBytes = 0
        /// Requests received and not yet answered in full (answers of `respond` only).
        var inFlight = 0
        /// `inFlight` as each request arrived, itself included, in arrival order.
        var inFlightAtArrival: [Int] = []
        /// Connections open now, the most open at once, and every one accepted.
        var openConnections = 0
        var mostOpenConnections = 0
        var connectionsAccepted = 0
    }

    /// How a request is answered.
    enum Behavior {
        case respond(HTTPResponseStatus, HTTPHeaders, [UInt8])
        case truncate([UInt8])
        /// The head declares the whole body; only the first `count` bytes follow, then a close.
        case cut(HTTPHeaders, [UInt8], count: Int)
        case drip([UInt8], milliseconds: Int64, chunk: Int)
        case stall([UInt8])
        case endless
        case reset
        indirect case delayed(milliseconds: Int64, Behavior)
        /// Answers like `respond`, then closes the connection whatever the client asked.
        case respondAndClose(HTTPResponseStatus, [UInt8])
    }

    /// The deterministic body of `/gen/KEY`.
    static func generated(_ key: String) -> [UInt8] {
        let digest = Array(SHA256.hash(data: Array(key.utf8)))
        let size = 1000 + Int(digest[0]) * 40
        return (0..<size).map { digest[$0 % digest.count] &+ UInt8(truncatingIfNeeded: $0 / digest.count) }
    }

    private let state: Mutex<State>
    private let channel: any Channel
    private let group: MultiThreadedEventLoopGroup
    let port: Int

    let scheme: String

    private init(channel: any Channel, group: MultiThreadedEventLoopGroup, scheme: String) {
        state = Mutex(State())
        self.scheme = scheme
        self.channel = channel
        self.group = group
        port = channel.localAddress!.port!
    }

    /// Starts the origin (plain http; the https origins of the tests are nginx: `NginxServer`).
    static func start(port: Int = 0) async throws -> TestOrigin {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let box = Box()
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(OriginHandler(origin: box))
                }
            }
            .bind(host: "127.0.0.1", port: port).get()
        let origin = TestOrigin(channel: channel, group: group, scheme: "http")
        box.set(origin)
        return origin
    }

    func stop() async {
        try? await channel.close()
        try? await group.shutdownGracefully()
    }

    // MARK: - Test controls

    func url(_ path: String) -> String { "\(scheme)://127.0.0.1:\(port)\(path)" }

    /// Serves `bytes` at `path` from now on.
    func set(_ path: String, _ bytes: [UInt8]) {
        state.withLock { $0.files[path] = bytes }
    }

    func set(_ path: String, _ text: String) { set(path, Array(text.utf8)) }

    func hits(_ path: String) -> Int { state.withLock { $0.hits[path] ?? 0 } }
    var totalRequests: Int { state.withLock { $0.total } }
    /// How many requests were in flight as each one arrived (itself included), in order.
    var inFlightAtArrival: [Int] { state.withLock { $0.inFlightAtArrival } }

    fileprivate func requestArrived() {
        state.withLock { state in
            state.inFlight += 1
            state.inFlightAtArrival.append(state.inFlight)
        }
    }

    fileprivate func requestAnswered() {
        state.withLock { $0.inFlight -= 1 }
    }

    /// The most connections open at once, and how many were accepted in all.
    var connections: (mostAtOnce: Int, accepted: Int) {
        state.withLock { ($0.mostOpenConnections, $0.connectionsAccepted) }
    }

    fileprivate func connectionOpened() {
        state.withLock { state in
            state.openConnections += 1
            state.connectionsAccepted += 1
            state.mostOpenConnections = max(state.mostOpenConnections, state.openConnections)
        }
    }

    fileprivate func connectionClosed() {
        state.withLock { $0.openConnections -= 1 }
    }
    /// Body bytes sent for files set with `set(_:_:)`.
    var bodyBytesSent: Int { state.withLock { $0.bodyBytes } }
    /// The request headers of the last request for `path`, names lowercased.
    func lastHeaders(_ path: String) -> [String: String]? { state.withLock { $0.headers[path] } }

    // MARK: - Routing

    static func etag(_ file: [UInt8]) -> String {
        "\"\(SHA256.hash(data: file).prefix(8).map { String(format: "%02x", $0) }.joined())\""
    }

    /// A stored file: 304 to a matching If-None-Match, 206 to `Range: bytes=N-` (when If-Range,
    /// if sent, still matches), else 200. Counts the body bytes sent.
    private func serveFile(_ file: [UInt8], _ head: HTTPRequestHead) -> Behavior {
        var headers = HTTPHeaders()
        let etag = Self.etag(file)
        headers.add(name: "ETag", value: etag)
        if head.headers.first(name: "if-none-match") == etag {
            return .respond(.notModified, headers, [])
        }
        if let range = head.headers.first(name: "range"), range.hasPrefix("bytes="), range.hasSuffix("-"),
            let start = Int(range.dropFirst(6).dropLast()),
            head.headers.first(name: "if-range").map({ $0 == etag }) ?? true
        {
            guard start < file.count else {
                headers.add(name: "Content-Range", value: "bytes */\(file.count)")
                return .respond(.rangeNotSatisfiable, headers, [])
            }
            let part = Array(file[start...])
            headers.add(name: "Content-Range", value: "bytes \(start)-\(file.count - 1)/\(file.count)")
            state.withLock { $0.bodyBytes += part.count }
            return .respond(.partialContent, headers, part)
        }
        state.withLock { $0.bodyBytes += file.count }
        return .respond(.ok, headers, file)
    }

    fileprivate func behavior(for head: HTTPRequestHead) -> Behavior {
        let segments = head.uri.split(separator: "/", maxSplits: 2).map(String.init)
        if segments.count == 3, segments[0] == "slow", let milliseconds = Int64(segments[1]) {
            var inner = head
            inner.uri = "/" + segments[2]
            return .delayed(milliseconds: milliseconds, behavior(for: inner))
        }
        if segments.count == 3, segments[0] == "slowwrite", let milliseconds = Int64(segments[1]) {
            var inner = head
            inner.uri = "/" + segments[2]
            let reads = head.method == .GET || head.method == .HEAD
            return reads ? behavior(for: inner) : .delayed(milliseconds: milliseconds, behavior(for: inner))
        }
        return route(head)
    }

    private func route(_ head: HTTPRequestHead) -> Behavior {
        let parts = head.uri.split(separator: "?", maxSplits: 1)
        let path = String(parts.first ?? "")
        let query = parts.count > 1 ? String(parts[1]) : ""
        let (file, count): ([UInt8]?, Int) = state.withLock { state in
            state.total += 1
            state.hits[path, default: 0] += 1
            state.headers[path] = Dictionary(head.headers.map { ($0.name.lowercased(), $0.value) }, uniquingKeysWith: { $1 })
            return (state.files[path], state.hits[path]!)
        }
        var headers = HTTPHeaders()
        if let file {
            return serveFile(file, head)
        }
        let segments = path.split(separator: "/").map(String.init)
        let rest = { (from: Int) in "/" + segments.dropFirst(from).joined(separator: "/") }
        let served = { (from: Int) in self.state.withLock { $0.files[rest(from)] } ?? Array("missing\n".utf8) }
        switch segments.first {
        case "close" where segments.count >= 2: return .respondAndClose(.ok, served(1))
        case "status" where segments.count == 2:
            return .respond(HTTPResponseStatus(statusCode: Int(segments[1]) ?? 500), headers, Array("status\n".utf8))
        case "flaky" where segments.count >= 4:
            guard count > Int(segments[1]) ?? 0 else {
                if query.hasPrefix("retry-after=") { headers.add(name: "Retry-After", value: String(query.dropFirst(12))) }
                return .respond(HTTPResponseStatus(statusCode: Int(segments[2]) ?? 500), headers, Array("flaky\n".utf8))
            }
            return .respond(.ok, headers, served(3))
        case "truncate": return .truncate(served(1))
        case "cut" where segments.count >= 3:
            let target = rest(2)
            guard let file = state.withLock({ $0.files[target] }) else { return .respond(.notFound, headers, []) }
            let first = state.withLock { state -> Bool in
                state.hits["cut:" + target, default: 0] += 1
                return state.hits["cut:" + target] == 1
            }
            guard first else { return serveFile(file, head) }
            let count = file.count * (Int(segments[1]) ?? 50) / 100
            headers.add(name: "ETag", value: Self.etag(file))
            state.withLock { $0.bodyBytes += count }
            return .cut(headers, file, count: count)
        case "encoded" where segments.count >= 2:
            headers.add(name: "Content-Encoding", value: "gzip")
            return .respond(.ok, headers, served(1))
        case "drip" where segments.count >= 3: return .drip(served(2), milliseconds: Int64(segments[1]) ?? 50, chunk: 1)
        case "trickle" where segments.count >= 4:
            switch head.method {
            case .GET: return .drip(served(3), milliseconds: Int64(segments[2]) ?? 50, chunk: max(1, Int(segments[1]) ?? 1))
            case .PUT: return .respond(.created, headers, [])
            default: return .respond(.notFound, headers, [])
            }
        case "stall": return .stall(served(1))
        case "endless": return .endless
        case "gen" where segments.count == 2: return .respond(.ok, headers, Self.generated(segments[1]))
        case "reset": return .reset
        case "redirect" where segments.count >= 3:
            let remaining = Int(segments[1]) ?? 1
            headers.add(name: "Location", value: remaining <= 1 ? rest(2) : "/redirect/\(remaining - 1)\(rest(2))")
            return .respond(.found, headers, [])
        case "loop" where segments.count == 2:
            headers.add(name: "Location", value: segments[1] == "a" ? "/loop/b" : "/loop/a")
            return .respond(.movedPermanently, headers, [])
        case "goto" where query.hasPrefix("to="):
            headers.add(name: "Location", value: String(query.dropFirst(3)).removingPercentEncoding ?? "")
            return .respond(.temporaryRedirect, headers, [])
        default:
            return .respond(.notFound, headers, Array("not found\n".utf8))
        }
    }
}

/// Lets the channel initializer reach the origin created after the bind.
private final class Box: Sendable {
    private let origin = Mutex<TestOrigin?>(nil)
    func set(_ value: TestOrigin) { origin.withLock { $0 = value } }
    func get() -> TestOrigin { origin.withLock { $0! } }
}

/// One per connection; NIO calls it on that connection's event loop only.
private final class OriginHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let origin: Box
    private var head: HTTPRequestHead?

    init(origin: Box) {
        self.origin = origin
    }

    func channelActive(context: ChannelHandlerContext) {
        origin.get().connectionOpened()
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        origin.get().connectionClosed()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            head = request
        case .body:
            break
        case .end:
            guard let request = head else { return }
            origin.get().requestArrived()
            serve(request, origin.get().behavior(for: request), context: context)
        }
    }

    private func serve(_ request: HTTPRequestHead, _ behavior: TestOrigin.Behavior, context: ChannelHandlerContext) {
        let channel = context.channel
        switch behavior {
        case .respondAndClose(let status, let body):
            respond(request, status, [:], body, keepAlive: false, context: context)
        case .respond(let status, let headers, let body):
            respond(request, status, headers, body, keepAlive: request.isKeepAlive, context: context)
        case .truncate(let body):
            writeHead(context, request, .ok, [:], length: body.count + 100, keepAlive: false)
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(channel.allocator.buffer(bytes: body))))).whenComplete { _ in
                channel.close(promise: nil)
            }
        case .cut(let headers, let body, let count):
            writeHead(context, request, .ok, headers, length: body.count, keepAlive: false)
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(channel.allocator.buffer(bytes: body.prefix(count)))))).whenComplete {
                _ in
                channel.close(promise: nil)
            }
        case .stall(let body):
            writeHead(context, request, .ok, [:], length: body.count, keepAlive: false)
            let half = Array(body.prefix(max(1, body.count / 2)))
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(channel.allocator.buffer(bytes: half)))), promise: nil)
        case .drip(let body, let milliseconds, let chunk):
            writeHead(context, request, .ok, [:], length: body.count, keepAlive: false)
            context.flush()
            drip(body[...], every: milliseconds, chunk: chunk, context: context)
        case .endless:
            var headers = HTTPHeaders()
            headers.add(name: "Transfer-Encoding", value: "chunked")
            context.writeAndFlush(
                wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: .ok, headers: headers))),
                promise: nil)
            pour(context: context, sent: 0)
        case .reset:
            channel.close(promise: nil)
        case .delayed(let milliseconds, let inner):
            context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(milliseconds)) {
                guard channel.isActive else { return }
                self.serve(request, inner, context: context)
            }
        }
    }

    private func respond(
        _ request: HTTPRequestHead, _ status: HTTPResponseStatus, _ headers: HTTPHeaders, _ body: [UInt8],
        keepAlive: Bool, context: ChannelHandlerContext
    ) {
        let channel = context.channel
        writeHead(context, request, status, headers, length: body.count, keepAlive: keepAlive)
        if !body.isEmpty { context.write(wrapOutboundOut(.body(.byteBuffer(channel.allocator.buffer(bytes: body)))), promise: nil) }
        let origin = origin.get()
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
            origin.requestAnswered()
            if !keepAlive { channel.close(promise: nil) }
        }
    }

    private func writeHead(
        _ context: ChannelHandlerContext, _ request: HTTPRequestHead, _ status: HTTPResponseStatus,
        _ headers: HTTPHeaders, length: Int, keepAlive: Bool
    ) {
        var headers = headers
        headers.replaceOrAdd(name: "Content-Length", value: "\(length)")
        headers.replaceOrAdd(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: status, headers: headers))), promise: nil)
    }

    private func drip(_ rest: ArraySlice<UInt8>, every milliseconds: Int64, chunk: Int, context: ChannelHandlerContext) {
        guard !rest.isEmpty, context.channel.isActive else {
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            return
        }
        context.writeAndFlush(
            wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: rest.prefix(chunk))))), promise: nil)
        let next = rest.dropFirst(chunk)
        context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(milliseconds)) {
            self.drip(next, every: milliseconds, chunk: chunk, context: context)
        }
    }

    /// Writes 64 KiB chunks while the client reads, up to 1 GiB.
    private func pour(context: ChannelHandlerContext, sent: Int) {
        guard context.channel.isActive, sent < 1 << 30 else {
            context.close(promise: nil)
            return
        }
        let chunk = context.channel.allocator.buffer(repeating: 0x61, count: 64 << 10)
        context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(chunk)))).assumeIsolated().whenComplete { result in
            guard case .success = result else { return }
            self.pour(context: context, sent: sent + (64 << 10))
        }
    }
}
