import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// What one HTTP exchange ended with.
enum ExchangeOutcome: Sendable {
    case body(Fetcher.VerifiedFile, etag: String?, lastModified: String?)
    case redirect(status: Int, location: String?)
    case status(Int, retryAfter: Double?)
    case notModified
}

/// AsyncHTTPClient's callbacks for one response, handed to a `ResponseHandler` on the
/// connection's event loop: the body is hashed and written where it arrives, with no hop to
/// another thread per chunk (for small files that would cost more than hashing them). What is
/// AsyncHTTPClient's own stays here: futures, and `--limit-rate`'s pause before the next read.
final class DownloadDelegate: HTTPClientResponseDelegate, @unchecked Sendable {
    // @unchecked: AsyncHTTPClient calls these methods on the request's event loop, one at a
    // time; `handler`'s figures are read only after the task's future completed.
    typealias Response = ExchangeOutcome

    private(set) var handler: ResponseHandler
    private let limits: RateLimits?

    init(handler: ResponseHandler, limits: RateLimits?) {
        self.handler = handler
        self.limits = limits
    }

    func didReceiveHead(task: HTTPClient.Task<ExchangeOutcome>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        let failure = handler.head(status: Int(head.status.code), httpMajorVersion: head.version.major,
                                   keepAlive: head.isKeepAlive) { head.headers.first(name: $0) }
        if let failure { return task.eventLoop.makeFailedFuture(failure) }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<ExchangeOutcome>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        guard handler.keepsBody else { return task.eventLoop.makeSucceededVoidFuture() }
        if let failure = buffer.withUnsafeReadableBytes({ handler.body($0) }) {
            return task.eventLoop.makeFailedFuture(failure)
        }
        // --limit-rate: the next part is read only once this one is paid for.
        if let limits, case let delay = limits.delay(afterReceiving: buffer.readableBytes), delay > 0 {
            return task.eventLoop.scheduleTask(in: .nanoseconds(Int64(delay * 1e9))) {}.futureResult
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveError(task: HTTPClient.Task<ExchangeOutcome>, _ error: any Error) {
        handler.cut()
    }

    func didFinishRequest(task: HTTPClient.Task<ExchangeOutcome>) throws -> ExchangeOutcome {
        try handler.finish().get()
    }
}
