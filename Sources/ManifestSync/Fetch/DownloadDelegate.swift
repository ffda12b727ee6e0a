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
/// temporary file as it arrives: no hop to another thread per chunk, which for small files
/// would cost more than hashing them.
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
    /// The request's URL, and the kept part of its body this request asked the rest of.
    private let url: String
    private let resume: PartialDownloads.Resume?
    private let resumeThreshold: Int64
    private var resumed = false
    /// ETag, else Last-Modified: what makes a cut body resumable.
    private var validator: String?
    private var sink: BodySink?
    private var declared: Int64?
    private var outcome: ExchangeOutcome?
    private var etag: String?
    private var lastModified: String?
    private(set) var bytesReceived: Int64 = 0
    /// The response came over HTTP/2 (read, like `bytesReceived`, after the task completed).
    private(set) var multiplexed = false
    /// The server closes the connection after this response (HTTP/1.0, `Connection: close`).
    private(set) var closesConnection = false

    init(store: ContentStore, expected: ContentHash?, maxSize: Int64, conditional: Bool, deadline: NIODeadline,
         entryTimeout: Double, limits: RateLimits?, url: String, resume: PartialDownloads.Resume?, resumeThreshold: Int64) {
        self.limits = limits
        self.url = url
        self.resume = resume
        self.resumeThreshold = resumeThreshold
        self.store = store
        self.expected = expected
        self.maxSize = maxSize
        self.conditional = conditional
        self.deadline = deadline
        self.entryTimeout = entryTimeout
    }

    func didReceiveHead(task: HTTPClient.Task<ExchangeOutcome>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        let status = Int(head.status.code)
        multiplexed = head.version.major >= 2
        closesConnection = !multiplexed && !head.isKeepAlive
        let loop = task.eventLoop
        if status == 301 || status == 302 || status == 303 || status == 307 || status == 308 {
            outcome = .redirect(status: status, location: head.headers.first(name: "location"))
            return loop.makeSucceededVoidFuture()
        }
        if status == 304, conditional {
            outcome = .notModified
            return loop.makeSucceededVoidFuture()
        }
        if status == 416, resume != nil {
            store.partials.discard(url)
            return loop.makeFailedFuture(restart("the server refused to resume at byte \(resume!.offset)"))
        }
        if status == 206, let resume {
            return continueBody(head, from: resume, on: loop)
        }
        // Anything but the rest of the kept part (a 200: the range was ignored, or the version
        // changed and If-Range sent it whole): the kept part is of no use.
        if resume != nil { store.partials.discard(url) }
        guard (200..<300).contains(status), status != 206 else {
            outcome = .status(status, retryAfter: head.headers.first(name: "retry-after").flatMap(FailureClassifier.parseRetryAfter))
            return loop.makeSucceededVoidFuture()
        }
        // worker never asks for an encoding (decompression is off, and manifests may not send
        // Accept-Encoding or TE), so an encoded body is a misconfigured server: its bytes are not
        // the content and are never stored as it. Retrying would get the same answer.
        if let encoding = head.headers.first(name: "content-encoding")?.trimmingCharacters(in: .whitespaces),
           !encoding.isEmpty, encoding.lowercased() != "identity" {
            return loop.makeFailedFuture(FetchFailure(
                .httpStatus, "the server sent the body with Content-Encoding: \(Redact.short(encoding, limit: 40)), "
                    + "which was not asked for; encoded bytes are never stored as the content",
                httpStatus: status, detail: .unrequestedEncoding(encoding)))
        }
        declared = head.headers.first(name: "content-length").flatMap { Int64($0) }
        if let declared, declared > maxSize {
            return loop.makeFailedFuture(FetchFailure(.tooLarge, "Content-Length \(declared) exceeds the limit of \(maxSize) bytes"))
        }
        etag = head.headers.first(name: "etag")
        lastModified = head.headers.first(name: "last-modified")
        validator = Self.strongValidator(etag) ?? lastModified
        do {
            let file = try store.makeTemporaryFile()
            sink = BodySink(fd: file.fd, path: file.path, expected: expected, maxSize: maxSize)
        } catch {
            return loop.makeFailedFuture(FetchFailure(storing: error))
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
        keepOrDiscard()
    }

    /// After a cut: a body past the threshold with a validator is kept to be resumed.
    private func keepOrDiscard() {
        guard var body = sink else { return }
        sink = nil
        if let validator, body.size >= resumeThreshold {
            body.keep()
            store.partials.keep(body.path, url: url, validator: validator)
        } else {
            body.discard()
            if resumed { store.partials.discard(url) }
        }
    }

    /// A 206: the rest of the kept part, appended to it (its bytes hashed again first).
    private func continueBody(_ head: HTTPResponseHead, from resume: PartialDownloads.Resume,
                              on loop: any EventLoop) -> EventLoopFuture<Void> {
        guard let range = head.headers.first(name: "content-range"), let start = Self.rangeStart(range),
              start == resume.offset, let length = head.headers.first(name: "content-length").flatMap({ Int64($0) })
        else {
            store.partials.discard(url)
            return loop.makeFailedFuture(restart("the server answered the resumed request with another range"))
        }
        declared = resume.offset + length
        if let declared, declared > maxSize {
            store.partials.discard(url)
            return loop.makeFailedFuture(FetchFailure(.tooLarge, "Content-Range total \(declared) exceeds the limit of \(maxSize) bytes"))
        }
        etag = head.headers.first(name: "etag")
        lastModified = head.headers.first(name: "last-modified")
        validator = resume.validator
        switch BodySink.resuming(path: resume.path, offset: resume.offset, expected: expected, maxSize: maxSize) {
        case .success(let body):
            sink = body
            resumed = true
            return loop.makeSucceededVoidFuture()
        case .failure:
            store.partials.discard(url)
            return loop.makeFailedFuture(restart("the kept part could not be read"))
        }
    }

    private func restart(_ why: String) -> FetchFailure {
        var failure = FetchFailure(.connection, "\(why); the next attempt starts over")
        failure.restartsFromScratch = true
        return failure
    }

    /// `bytes START-END/TOTAL` → START.
    static func rangeStart(_ value: String) -> Int64? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = trimmed.dropFirst(6)
        guard let dash = spec.firstIndex(of: "-") else { return nil }
        return Int64(spec[..<dash])
    }

    /// An ETag usable with If-Range: a strong one (a weak `W/` tag may not be used there).
    static func strongValidator(_ etag: String?) -> String? {
        guard let etag, !etag.hasPrefix("W/") else { return nil }
        return etag
    }

    func didFinishRequest(task: HTTPClient.Task<ExchangeOutcome>) throws -> ExchangeOutcome {
        if let outcome { return outcome }
        guard let body = sink else { throw FetchFailure(.connection, "the response ended without a body") }
        if let declared, body.size != declared {
            let size = body.size
            keepOrDiscard()
            throw FetchFailure(.connection, "truncated body: received \(size) of \(declared) bytes")
        }
        sink = nil
        var closing = body
        switch closing.close() {
        case .failure(var failure):
            if resumed {
                // The kept part and the rest do not make the content: start over.
                store.partials.discard(url)
                failure = FetchFailure(failure.reason, failure.message + " (after resuming a kept part; the next attempt starts over)")
                failure.restartsFromScratch = true
            }
            throw failure
        case .success(let digests):
            if resumed { store.partials.completed(url) }
            return .body(Fetcher.VerifiedFile(path: closing.path, sha256: digests.sha256, size: closing.size),
                         etag: etag, lastModified: lastModified)
        }
    }

    private func fail(_ task: HTTPClient.Task<ExchangeOutcome>, _ failure: FetchFailure) -> EventLoopFuture<Void> {
        if failure.reason == .timeout {
            // Too slow is a cut like any other: what arrived can be resumed.
            keepOrDiscard()
        } else {
            sink?.discard()
            sink = nil
            if resumed { store.partials.discard(url) }
        }
        return task.eventLoop.makeFailedFuture(failure)
    }
}
