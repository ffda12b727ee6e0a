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

/// Receives one response on its connection's event loop and hashes and writes the body to a
/// temporary file as it arrives: no hop to another thread per chunk (with the async body
/// sequence, thread switches were the largest cost of a cold sync of small files).
final class DownloadDelegate: HTTPClientResponseDelegate, @unchecked Sendable {
    // @unchecked: AsyncHTTPClient calls these methods on the request's event loop, one at a
    // time; `bytesReceived` (content bytes only) is read only after the task's future completed.
    typealias Response = ExchangeOutcome

    private let store: ContentStore
    private let expected: ContentHash?
    private let maxSize: Int64
    private let conditional: Bool
    private let deadline: NIODeadline
    private let entryTimeout: Double
    private let limits: RateLimits?
    private var sink: BodySink?
    private var declared: Int64?
    private var outcome: ExchangeOutcome?
    private var etag: String?
    private var lastModified: String?
    private(set) var bytesReceived: Int64 = 0

    init(store: ContentStore, expected: ContentHash?, maxSize: Int64, conditional: Bool, deadline: NIODeadline,
         entryTimeout: Double, limits: RateLimits?) {
        self.limits = limits
        self.store = store
        self.expected = expected
        self.maxSize = maxSize
        self.conditional = conditional
        self.deadline = deadline
        self.entryTimeout = entryTimeout
    }

    func didReceiveHead(task: HTTPClient.Task<ExchangeOutcome>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        let status = Int(head.status.code)
        let loop = task.eventLoop
        if status == 301 || status == 302 || status == 303 || status == 307 || status == 308 {
            outcome = .redirect(status: status, location: head.headers.first(name: "location"))
            return loop.makeSucceededVoidFuture()
        }
        if status == 304, conditional {
            outcome = .notModified
            return loop.makeSucceededVoidFuture()
        }
        guard (200..<300).contains(status), status != 206 else {
            outcome = .status(status, retryAfter: head.headers.first(name: "retry-after").flatMap(FailureClassifier.parseRetryAfter))
            return loop.makeSucceededVoidFuture()
        }
        // worker never asks for an encoding (decompression is off, and manifests may not send
        // Accept-Encoding or TE), so an encoded body is a misconfigured server: its bytes are not
        // the content and are never stored as it. Retrying would get the same answer.
        if let encoding = head.headers.first(name: "content-encoding"),
           !encoding.trimmingCharacters(in: .whitespaces).isEmpty,
           encoding.trimmingCharacters(in: .whitespaces).lowercased() != "identity" {
            return loop.makeFailedFuture(FetchFailure(
                .httpStatus, "the server sent the body with Content-Encoding: \(Redact.short(encoding, limit: 40)), "
                    + "which was not asked for; encoded bytes are never stored as the content",
                httpStatus: status, isPermanent: true))
        }
        declared = head.headers.first(name: "content-length").flatMap { Int64($0) }
        if let declared, declared > maxSize {
            return loop.makeFailedFuture(FetchFailure(.tooLarge, "Content-Length \(declared) exceeds the limit of \(maxSize) bytes"))
        }
        etag = head.headers.first(name: "etag")
        lastModified = head.headers.first(name: "last-modified")
        do {
            let file = try store.makeTemporaryFile()
            sink = BodySink(fd: file.fd, path: file.path, expected: expected, maxSize: maxSize)
        } catch {
            return loop.makeFailedFuture(error)
        }
        return loop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<ExchangeOutcome>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        // Bodies of redirects and error statuses are read (the connection stays usable) and dropped.
        guard sink != nil else { return task.eventLoop.makeSucceededVoidFuture() }
        bytesReceived += Int64(buffer.readableBytes)
        if NIODeadline.now() > deadline {
            return fail(task, FetchFailure(.timeout, "the download took longer than the entry timeout (\(entryTimeout) s)"))
        }
        if let failure = buffer.withUnsafeReadableBytes({ sink!.write($0) }) {
            return fail(task, failure)
        }
        // --limit-rate: the next part is read only once this one is paid for.
        if let limits, case let delay = limits.delay(afterReceiving: buffer.readableBytes), delay > 0 {
            return task.eventLoop.scheduleTask(in: .nanoseconds(Int64(delay * 1e9))) {}.futureResult
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveError(task: HTTPClient.Task<ExchangeOutcome>, _ error: any Error) {
        sink?.discard()
        sink = nil
    }

    func didFinishRequest(task: HTTPClient.Task<ExchangeOutcome>) throws -> ExchangeOutcome {
        if let outcome { return outcome }
        guard var body = sink else { throw FetchFailure(.connection, "the response ended without a body") }
        sink = nil
        if let declared, body.size != declared {
            body.discard()
            throw FetchFailure(.connection, "truncated body: received \(body.size) of \(declared) bytes")
        }
        switch body.close() {
        case .failure(let failure):
            throw failure
        case .success(let digests):
            return .body(Fetcher.VerifiedFile(path: body.path, sha256: digests.sha256, size: body.size),
                         etag: etag, lastModified: lastModified)
        }
    }

    private func fail(_ task: HTTPClient.Task<ExchangeOutcome>, _ failure: FetchFailure) -> EventLoopFuture<Void> {
        sink?.discard()
        sink = nil
        return task.eventLoop.makeFailedFuture(failure)
    }
}
