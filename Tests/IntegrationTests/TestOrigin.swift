import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A real HTTP origin on 127.0.0.1 (port 0) for integration tests: serves in-memory files, counts
/// every request by path, and has routes for failure modes.
///
/// Routes: any path set with `set(_:_:)` serves those bytes (with an ETag); `/status/CODE` answers
/// CODE; `/redirect/N/PATH` redirects N times, then to PATH; anything else is 404.
final class TestOrigin: Sendable {
    struct State {
        var files: [String: [UInt8]] = [:]
        var hits: [String: Int] = [:]
        var headers: [String: [String: String]] = [:]
        var total = 0
    }

    private let state: Mutex<State>
    private let channel: any Channel
    private let group: MultiThreadedEventLoopGroup
    let port: Int

    private init(channel: any Channel, group: MultiThreadedEventLoopGroup) {
        state = Mutex(State())
        self.channel = channel
        self.group = group
        port = channel.localAddress!.port!
    }

    static func start() async throws -> TestOrigin {
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
            .bind(host: "127.0.0.1", port: 0).get()
        let origin = TestOrigin(channel: channel, group: group)
        box.set(origin)
        return origin
    }

    func stop() async {
        try? await channel.close()
        try? await group.shutdownGracefully()
    }

    // MARK: - Test controls

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// Serves `bytes` at `path` from now on.
    func set(_ path: String, _ bytes: [UInt8]) {
        state.withLock { $0.files[path] = bytes }
    }

    func set(_ path: String, _ text: String) { set(path, Array(text.utf8)) }

    func hits(_ path: String) -> Int { state.withLock { $0.hits[path] ?? 0 } }
    var totalRequests: Int { state.withLock { $0.total } }
    /// The request headers of the last request for `path`, names lowercased.
    func lastHeaders(_ path: String) -> [String: String]? { state.withLock { $0.headers[path] } }

    // MARK: - Serving

    fileprivate func respond(to head: HTTPRequestHead) -> (HTTPResponseHead, [UInt8]) {
        let path = String(head.uri.split(separator: "?", maxSplits: 1).first ?? "")
        let file: [UInt8]? = state.withLock { state in
            state.total += 1
            state.hits[path, default: 0] += 1
            state.headers[path] = Dictionary(head.headers.map { ($0.name.lowercased(), $0.value) }, uniquingKeysWith: { $1 })
            return state.files[path]
        }
        var headers = HTTPHeaders()
        if let file {
            headers.add(name: "ETag", value: "\"\(SHA256.hash(data: file).prefix(8).map { String(format: "%02x", $0) }.joined())\"")
            return (response(head, .ok, headers), file)
        }
        let parts = path.split(separator: "/", omittingEmptySubsequences: true)
        if parts.count == 2, parts[0] == "status", let code = Int(parts[1]) {
            return (response(head, HTTPResponseStatus(statusCode: code), headers), Array("status \(code)\n".utf8))
        }
        if parts.count >= 3, parts[0] == "redirect", let count = Int(parts[1]) {
            let rest = "/" + parts.dropFirst(2).joined(separator: "/")
            headers.add(name: "Location", value: count <= 1 ? rest : "/redirect/\(count - 1)\(rest)")
            return (response(head, .found, headers), [])
        }
        return (response(head, .notFound, headers), Array("not found\n".utf8))
    }

    private func response(_ request: HTTPRequestHead, _ status: HTTPResponseStatus, _ headers: HTTPHeaders) -> HTTPResponseHead {
        HTTPResponseHead(version: request.version, status: status, headers: headers)
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

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            head = request
        case .body:
            break
        case .end:
            guard let request = head else { return }
            var (responseHead, body) = origin.get().respond(to: request)
            let keepAlive = request.isKeepAlive
            responseHead.headers.replaceOrAdd(name: "Content-Length", value: "\(body.count)")
            responseHead.headers.replaceOrAdd(name: "Connection", value: keepAlive ? "keep-alive" : "close")
            context.write(wrapOutboundOut(.head(responseHead)), promise: nil)
            if !body.isEmpty && request.method != .HEAD {
                context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
            }
            let closing = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
                if !keepAlive { closing.close(promise: nil) }
            }
        }
    }
}
