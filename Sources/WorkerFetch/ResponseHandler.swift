import FoundationEssentials
import Glibc
import WorkerManifest
import WorkerStore
import WorkerSupport

/// What one response's head, body and end decide, whatever carries them: redirects, 304 to a
/// conditional request, the rest of a kept part (206), error statuses, an unrequested encoding,
/// the size limit; the body is hashed and written to a temporary file as it arrives
/// (`BodySink`), and a body cut off past the resume threshold is kept to be resumed.
/// libcurl's callbacks (`CurlTransfer`) feed it; it makes no request and knows no thread, one
/// response's calls come one at a time.
public struct ResponseHandler {
    /// Where bodies go; nil for a handler that reads the status only.
    private let store: ContentStore?
    private let expected: ContentHash?
    private let maxSize: Int64
    private let conditional: Bool
    /// When the entry's time is up (monotonic seconds).
    private let deadline: Double
    private let entryTimeout: Double
    /// The request's URL, and the kept part of its body this request asked the rest of.
    private let url: String
    private let resume: PartialDownloads.Resume?
    private let resumeThreshold: Int64
    /// Reads only the status (a HEAD, a PUT's answer): any status is `.status`, no body is kept.
    private let readsStatusOnly: Bool
    /// The one header a status-only exchange reads (`.statusAndHeader`).
    private var readsHeader: String?
    private var resumed = false
    /// ETag, else Last-Modified: what makes a cut body resumable.
    private var validator: String?
    private var sink: BodySink? {
        didSet { keepsBody = sink != nil }
    }
    private var declared: Int64?
    private var outcome: ExchangeOutcome?
    private var etag: String?
    private var lastModified: String?
    /// Content bytes received.
    public private(set) var bytesReceived: Int64 = 0
    /// The response came over HTTP/2.
    public private(set) var multiplexed = false
    /// The server closes the connection after this response (HTTP/1.0, `Connection: close`).
    public private(set) var closesConnection = false

    public init(
        store: ContentStore?, expected: ContentHash?, maxSize: Int64, conditional: Bool, deadline: Double,
        entryTimeout: Double, url: String, resume: PartialDownloads.Resume?, resumeThreshold: Int64,
        readsStatusOnly: Bool = false
    ) {
        self.readsStatusOnly = readsStatusOnly
        self.store = store
        self.expected = expected
        self.maxSize = maxSize
        self.conditional = conditional
        self.deadline = deadline
        self.entryTimeout = entryTimeout
        self.url = url
        self.resume = resume
        self.resumeThreshold = resumeThreshold
    }

    /// A handler that reads a response's status only (a HEAD, the answer to a PUT).
    static func statusOnly(url: String, deadline: Double) -> ResponseHandler {
        ResponseHandler(
            store: nil, expected: nil, maxSize: 0, conditional: false, deadline: deadline, entryTimeout: 0,
            url: url, resume: nil, resumeThreshold: .max, readsStatusOnly: true)
    }

    /// A handler that reads a response's status and one header (one of `headerNames`): a HEAD
    /// in S3's checksum mode (`x-amz-checksum-sha256`), a registry's challenge (`www-authenticate`).
    public static func statusAndHeader(_ name: String, url: String, deadline: Double) -> ResponseHandler {
        var handler = statusOnly(url: url, deadline: deadline)
        handler.readsHeader = name
        return handler
    }

    /// The response headers `head` reads (lowercase): a transport may keep only these.
    public static let headerNames = [
        "content-encoding", "content-length", "content-range", "etag", "last-modified",
        "location", "retry-after", "transfer-encoding", "www-authenticate", "x-amz-checksum-sha256",
    ]

    /// The status line and headers (`headers` gives every instance of one, by its lowercase name,
    /// one of `headerNames`, in the order received). A failure ends the exchange; nil reads on.
    public mutating func head(status: Int, httpMajorVersion: Int, keepAlive: Bool, headers: (String) -> [String]) -> FetchFailure? {
        let failure = readHead(status: status, httpMajorVersion: httpMajorVersion, keepAlive: keepAlive, headers: headers)
        bytesToCome = sink.map { sink in declared.map { $0 - (resumed ? sink.size : 0) } } ?? 0
        return failure
    }

    private mutating func readHead(status: Int, httpMajorVersion: Int, keepAlive: Bool, headers: (String) -> [String]) -> FetchFailure? {
        func header(_ name: String) -> String? { headers(name).first }
        multiplexed = httpMajorVersion >= 2
        closesConnection = !multiplexed && !keepAlive
        if readsStatusOnly {
            outcome = readsHeader.map { .statusAndHeader(status, value: header($0)) } ?? .status(status, retryAfter: nil)
            return nil
        }
        if status == 301 || status == 302 || status == 303 || status == 307 || status == 308 {
            outcome = .redirect(status: status, location: header("location"))
            return nil
        }
        if status == 304, conditional {
            outcome = .notModified
            return nil
        }
        if status == 416, let resume {
            store?.partials.discard(url)
            return restart("the server refused to resume at byte \(resume.offset)")
        }
        // Whatever the status, a body coded in a way nobody asked for is not the content (and a
        // 206's rest would be spliced onto the kept part in that coding).
        if (200..<300).contains(status),
            let (problem, coding) = ResponseFraming.codingProblem(
                contentEncoding: headers("content-encoding"), transferEncoding: headers("transfer-encoding"))
        {
            if resume != nil { store?.partials.discard(url) }
            return FetchFailure(.httpStatus, problem.message, httpStatus: status, detail: .unrequestedEncoding(coding))
        }
        if status == 206, let resume {
            return continueBody(from: resume, headers: headers)
        }
        // Anything but the rest of the kept part (a 200: the range was ignored, or the version
        // changed and If-Range sent it whole): the kept part is of no use.
        if resume != nil { store?.partials.discard(url) }
        // 200 and 203 carry the content; 204 and 205 say there is none, 206 answers a range
        // this request did not ask for, and the others are not answers to a GET of a file.
        guard status == 200 || status == 203 else {
            let retryAfter = header("retry-after").flatMap(FailureClassifier.parseRetryAfter)
            outcome = .status(status, retryAfter: retryAfter)
            return nil
        }
        switch ResponseFraming.contentLength(headers("content-length")) {
        case .failure(let problem):
            return FetchFailure(.connection, problem.message)
        case .success(let length):
            declared = length
        }
        if let declared, declared > maxSize {
            return FetchFailure(.tooLarge, "Content-Length \(declared) exceeds the limit of \(maxSize) bytes")
        }
        etag = Self.validator(header("etag"))
        lastModified = Self.validator(header("last-modified"))
        validator = Self.strongValidator(etag) ?? lastModified
        do {
            guard let store else { return FetchFailure(.io, "no store for a body") }
            let file = try store.makeTemporaryFile()
            sink = BodySink(fd: file.fd, path: file.path, expected: expected, maxSize: maxSize, declaredSize: declared)
        } catch {
            return FetchFailure(storing: error)
        }
        return nil
    }

    /// The content bytes this response's head said will follow (for a resumed body, the rest
    /// only); nil when it did not say, 0 for a body that is not content.
    public private(set) var bytesToCome: Int64? = 0

    /// Whether this response's body is content (not a redirect's or an error status's, which
    /// are read so the connection stays usable, and dropped). Stored, as `bytesToCome` is: the
    /// transfer reads them in place, where a computed property's getter would copy the handler.
    public private(set) var keepsBody = false

    /// A part of the body. A failure ends the exchange (what arrived is kept to be resumed when
    /// the entry ran out of time, else deleted).
    public mutating func body(_ bytes: UnsafeRawBufferPointer) -> FetchFailure? {
        guard sink != nil else { return nil }
        bytesReceived += Int64(bytes.count)
        if Monotonic.now() > deadline {
            return failBody(FetchFailure(.timeout, "the download took longer than the entry timeout (\(entryTimeout) s)"))
        }
        if let failure = sink!.write(bytes) {
            return failBody(failure)
        }
        return nil
    }

    /// The connection failed or was cut: a body past the threshold with a validator is kept to
    /// be resumed.
    public mutating func cut() {
        keepOrDiscard()
    }

    /// The response ended: its outcome, or why it is no use (a truncated body, a hash mismatch).
    public mutating func finish() -> Result<ExchangeOutcome, FetchFailure> {
        if let outcome { return .success(outcome) }
        guard let body = sink else { return .failure(FetchFailure(.connection, "the response ended without a body")) }
        if let declared, body.size != declared {
            let size = body.size
            keepOrDiscard()
            return .failure(FetchFailure(.connection, "truncated body: received \(size) of \(declared) bytes"))
        }
        sink = nil
        var closing = body
        switch closing.close() {
        case .failure(var failure):
            if resumed {
                // The kept part and the rest do not make the content: start over.
                store?.partials.discard(url)
                failure = FetchFailure(failure.reason, failure.message + " (after resuming a kept part; the next attempt starts over)")
                failure.restartsFromScratch = true
            }
            return .failure(failure)
        case .success(let digests):
            if resumed { store?.partials.completed(url) }
            return .success(
                .body(
                    VerifiedFile(path: closing.path, sha256: digests.sha256, size: closing.size),
                    etag: etag, lastModified: lastModified))
        }
    }

    private mutating func keepOrDiscard() {
        guard var body = sink else { return }
        sink = nil
        if let validator, body.size >= resumeThreshold {
            body.keep()
            store?.partials.keep(body.path, url: url, validator: validator)
        } else {
            body.discard()
            if resumed { store?.partials.discard(url) }
        }
    }

    private mutating func failBody(_ failure: FetchFailure) -> FetchFailure {
        if failure.reason == .timeout {
            // Too slow is a cut like any other: what arrived can be resumed.
            keepOrDiscard()
        } else {
            sink?.discard()
            sink = nil
            if resumed { store?.partials.discard(url) }
        }
        return failure
    }

    /// A 206: the rest of the kept part, appended to it (its bytes hashed again first). Its
    /// range must start where the kept part ends and run to the end of the body.
    private mutating func continueBody(from resume: PartialDownloads.Resume, headers: (String) -> [String]) -> FetchFailure? {
        let total: Int64
        switch ResponseFraming.resumedTotal(
            offset: resume.offset, contentRange: headers("content-range"),
            contentLength: headers("content-length"))
        {
        case .failure(let problem):
            store?.partials.discard(url)
            return restart(problem.message)
        case .success(let value):
            total = value
        }
        if total > maxSize {
            store?.partials.discard(url)
            return FetchFailure(.tooLarge, "Content-Range total \(total) exceeds the limit of \(maxSize) bytes")
        }
        declared = total
        etag = Self.validator(headers("etag").first)
        lastModified = Self.validator(headers("last-modified").first)
        validator = resume.validator
        switch BodySink.resuming(path: resume.path, offset: resume.offset, expected: expected, maxSize: maxSize) {
        case .success(let body):
            sink = body
            resumed = true
            return nil
        case .failure:
            store?.partials.discard(url)
            return restart("the kept part could not be read")
        }
    }

    private func restart(_ why: String) -> FetchFailure {
        var failure = FetchFailure(.connection, "\(why); the next attempt starts over")
        failure.restartsFromScratch = true
        return failure
    }

    /// A validator (ETag, Last-Modified) as the server sent it, when it can be sent back in a
    /// request header: nil when it holds a control character (CR, LF, other C0, DEL), a byte
    /// outside ASCII, or is too long to be one.
    static func validator(_ value: String?) -> String? {
        guard let value, !value.isEmpty, value.utf8.count <= 512, HTTPToken.isASCIIFieldValue(value) else { return nil }
        return value
    }

    /// An ETag usable with If-Range: a strong one (a weak `W/` tag may not be used there).
    static func strongValidator(_ etag: String?) -> String? {
        guard let etag, !etag.hasPrefix("W/") else { return nil }
        return etag
    }
}
