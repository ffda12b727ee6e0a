import CCurl
import FoundationEssentials
import Glibc
import WorkerFetch
import WorkerManifest
import WorkerSupport

/// One HTTP exchange on the `CurlEngine`: its request, and libcurl's callbacks for the response
/// turned into a `ResponseHandler`'s head, body and end. Status line and header lines are parsed
/// here; the body is hashed and written where libcurl hands it over, on the engine's thread.
final class CurlTransfer: EngineTransfer {
    let url: String
    /// `Name: value` lines sent besides the User-Agent.
    let requestHeaders: [String]
    /// When the exchange must have ended (monotonic seconds).
    let deadline: Double
    let done: @Sendable (ExchangeReply) -> Void
    /// The engine it runs on (for `--limit-rate`'s pauses, on its timers).
    private let engine: any FetchEngine
    private let limits: RateLimits?
    private let meter: TransferMeter?
    /// The request's origin (its group's, redirects or not): the window a head grows.
    let origin: Origin?
    let method: TransferMethod
    /// The request's own timeouts (nil: the engine's).
    let timeouts: TransferTimeouts?
    /// Signed by libcurl (AWS Signature Version 4).
    let signing: AWSSigning?
    /// An `sftp://` request's login (`CurlTransfer+SFTP`); nil for http(s).
    let ssh: SSHLogin?
    /// Made with the transfer, then touched only on the engine's thread (checked).
    let state: EngineBound<State>

    /// The exchange as it goes.
    final class State {
        var handler: ResponseHandler
        /// The file a PUT sends, closed when the transfer ends (or never starts).
        var upload: Int32 = -1
        /// What the meter was told: that the request went out, its head, and its declared length.
        var metered = (sent: false, head: false, declared: Int64?.none)
        var handle: UnsafeMutableRawPointer?
        var headerList: UnsafeMutablePointer<curl_slist>?
        /// Why a callback ended the exchange.
        var failure: FetchFailure?
        var head = ResponseHeadReader()
        var connected = false
        /// Bumped by every callback that shows the connection alive: the read timeout watches it.
        var activity = 0
        var paused = false
        /// An abort that arrived before the transfer began (a stop racing its start): it ends the
        /// transfer as soon as the engine gets to it.
        var abortedBeforeStart: FetchFailure?
        var deadlineTimer: Int?
        var silenceTimer: Int?
        var pauseTimer: Int?
        /// How an SFTP host's key compared with the known_hosts file, and the key it offered.
        var hostKey: (match: curl_khmatch, offered: OfferedHostKey?)?

        init(handler: sending ResponseHandler, upload: Int32) {
            self.handler = handler
            self.upload = upload
        }

        deinit {
            if upload >= 0 { Glibc.close(upload) }
        }
    }

    init(
        _ request: TransferRequest, handler: sending ResponseHandler, engine: any FetchEngine, thread: EngineThread,
        done: @escaping @Sendable (ExchangeReply) -> Void
    ) {
        meter = request.meter
        origin = request.origin
        url = request.url
        requestHeaders = request.headers
        deadline = request.deadline
        limits = request.limits
        method = request.method
        timeouts = request.timeouts
        signing = request.signing
        ssh = request.ssh
        var upload: Int32 = -1
        if case .put(let fd, _) = request.method { upload = fd }
        state = EngineBound(State(handler: handler, upload: upload), on: thread)
        self.engine = engine
        self.done = done
    }

    var isAttached: Bool { state.value.handle != nil }

    /// Sets up `handle` for this request; a failure ends the exchange before it starts.
    func attach(to handle: UnsafeMutableRawPointer) -> FetchFailure? {
        let state = state.value
        state.handle = handle
        if let failure = setRequestOptions(handle) { return failure }
        func add(_ line: String) -> FetchFailure? {
            guard let list = worker_curl_slist_append(state.headerList, line) else {
                return FetchFailure(.io, "out of memory for the request's headers")
            }
            state.headerList = list
            return nil
        }
        for line in requestHeaders {
            if let failure = add(line) { return failure }
        }
        // A PUT's body follows at once, without waiting for a 100 Continue.
        if state.upload >= 0, let failure = add("Expect:") { return failure }
        // Retained until `detach`: libcurl's callbacks find the transfer through this pointer.
        let context = Unmanaged.passRetained(self).toOpaque()
        // libcurl copies the URL; `withCString` lends the string's own bytes (passing the `String`
        // itself would copy it into a new array first).
        if url.withCString({ worker_curl_set_string(handle, CURLOPT_URL, $0) }) != CURLE_OK {
            Unmanaged<CurlTransfer>.fromOpaque(context).release()
            return FetchFailure(.connection, "cannot request \(Redact.url(url)): not a valid http(s) URL")
        }
        worker_curl_set_pointer(handle, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(state.headerList))
        worker_curl_set_pointer(handle, CURLOPT_PRIVATE, context)
        worker_curl_set_pointer(handle, CURLOPT_WRITEDATA, context)
        worker_curl_set_pointer(handle, CURLOPT_HEADERDATA, context)
        worker_curl_set_pointer(handle, CURLOPT_PREREQDATA, context)
        if state.upload >= 0 { worker_curl_set_pointer(handle, CURLOPT_READDATA, context) }
        if ssh != nil { worker_curl_set_pointer(handle, CURLOPT_SSH_KEYDATA, context) }
        meter?.requestSent()
        state.metered.sent = true
        return nil
    }

    /// Lets go of the handle (the engine keeps it or cleans it up) and of the request's headers
    /// and file.
    func detach() {
        let state = state.value
        if let handle = state.handle {
            // libcurl keeps the list's pointer, not a copy: a kept handle must not hold it freed.
            worker_curl_set_pointer(handle, CURLOPT_HTTPHEADER, nil)
            if let context = worker_curl_info_private(handle) {
                worker_curl_set_pointer(handle, CURLOPT_PRIVATE, nil)
                Unmanaged<CurlTransfer>.fromOpaque(context).release()
            }
        }
        if state.upload >= 0 {
            Glibc.close(state.upload)
            state.upload = -1
        }
        worker_curl_slist_free_all(state.headerList)
        state.headerList = nil
        state.handle = nil
    }

    /// Ends the exchange before it reached libcurl.
    func complete(with failure: FetchFailure) {
        done(ExchangeReply(result: .failure(failure), bytes: 0, multiplexed: false, closesConnection: false))
    }

    /// What the exchange ended with: libcurl's result `code`, or `cutShort` when the engine ended
    /// it (a timeout, a stop).
    func finish(code: CURLcode?, cutShort: FetchFailure?) -> ExchangeReply {
        let state = state.value
        let result: Result<ExchangeOutcome, FetchFailure>
        if let cutShort {
            state.handler.cut()
            result = .failure(cutShort)
        } else if let failure = state.failure {
            // The handler said so itself (and dealt with its body).
            result = .failure(failure)
        } else if ssh != nil, !state.head.isDone, code == CURLE_OK || code == CURLE_BAD_DOWNLOAD_RESUME || code == CURLE_RANGE_ERROR,
            !sftpHeadArrived(rangeRefused: code != CURLE_OK)
        {
            // An SFTP file without a body, or a kept part longer than the file: its answer now.
            result = .failure(state.failure ?? FetchFailure(.connection, "the response ended without a head"))
        } else if code == CURLE_OK, state.head.isDone {
            result = state.handler.finish()
        } else if code == CURLE_OK {
            result = .failure(FetchFailure(.connection, "the response ended without a head"))
        } else {
            state.handler.cut()
            result = .failure(code.map { classify($0, state) } ?? FetchFailure(.connection, "the response ended without a head"))
        }
        if state.metered.sent, let meter {
            meter.exchangeEnded(
                declared: state.metered.declared, received: state.handler.bytesReceived,
                headArrived: state.metered.head)
        }
        return ExchangeReply(
            result: result, bytes: state.handler.bytesReceived, multiplexed: state.handler.multiplexed,
            closesConnection: state.handler.closesConnection)
    }

    private func classify(_ code: CURLcode, _ state: State) -> FetchFailure {
        let osErrno = state.handle.map { Int32(worker_curl_info_long($0, CURLINFO_OS_ERRNO)) } ?? 0
        let failure = CurlFailure.failure(
            code, osErrno: osErrno, url: url, connected: state.connected,
            crawl: timeouts.map { (max(1, $0.slowestRate), $0.read.rounded(.up)) })
        return ssh == nil ? failure : sftpFailure(code, otherwise: failure)
    }

    // MARK: - libcurl's callbacks, on the engine's thread

    /// Sets the three callbacks; libcurl's answer to each, by option name. The transfer a callback
    /// is for is alive while libcurl calls it (the engine holds it until its handle is removed),
    /// so it is used without a retain and release around every part of every body.
    static func setCallbacks(_ handle: UnsafeMutableRawPointer) -> [(CURLcode, String)] {
        let write = worker_curl_set_data_callback(handle, CURLOPT_WRITEFUNCTION) { data, size, count, context in
            Unmanaged<CurlTransfer>.fromOpaque(context!)._withUnsafeGuaranteedRef {
                $0.received(UnsafeRawBufferPointer(start: data, count: size * count))
            }
        }
        let header = worker_curl_set_data_callback(handle, CURLOPT_HEADERFUNCTION) { data, size, count, context in
            Unmanaged<CurlTransfer>.fromOpaque(context!)._withUnsafeGuaranteedRef {
                $0.headerLine(UnsafeRawBufferPointer(start: data, count: size * count))
            }
        }
        let prereq = worker_curl_set_prereq_callback(handle) { context, _, _, _, _ in
            let state = Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue().state.value
            state.connected = true
            state.activity &+= 1
            return CURL_PREREQFUNC_OK
        }
        // Used by PUTs only: the file's next part.
        let read = worker_curl_set_data_callback(handle, CURLOPT_READFUNCTION) { data, size, count, context in
            Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue().send(into: data, capacity: size * count)
        }
        return [
            (write, "CURLOPT_WRITEFUNCTION"), (header, "CURLOPT_HEADERFUNCTION"), (prereq, "CURLOPT_PREREQFUNCTION"),
            (read, "CURLOPT_READFUNCTION"),
        ]
    }

    /// A part of the body. Returning less than its size ends the exchange (libcurl: write error).
    private func received(_ bytes: UnsafeRawBufferPointer) -> Int {
        let state = state.value
        state.activity &+= 1
        guard state.failure == nil else { return 0 }
        // An SFTP file has no head: it is made of what libcurl knows once the body starts.
        if ssh != nil, !state.head.isDone, !sftpHeadArrived() { return 0 }
        guard state.head.isDone, state.handler.keepsBody else { return bytes.count }
        if let limits, case let wait = limits.wait(), wait > 0 {
            // --limit-rate: the run's budget is spent for now; this part is handed over again
            // once it is paid for (by this transfer's bytes or another's).
            state.paused = true
            state.pauseTimer = engine.schedule(in: wait) { [self] fired in
                let state = self.state.value
                guard fired, let handle = state.handle else { return }
                state.paused = false
                state.activity &+= 1
                worker_curl_easy_pause(handle, CURLPAUSE_CONT)
            }
            return Int(CURL_WRITEFUNC_PAUSE)
        }
        if let failure = state.handler.body(bytes) {
            state.failure = failure
            return 0
        }
        limits?.spend(bytes.count)
        meter?.bodyReceived(bytes.count)
        return bytes.count
    }

    /// One line of the response's head: the status line, a header, or the blank line that ends
    /// it (an informational 1xx head is skipped; trailers after the body are ignored).
    private func headerLine(_ line: UnsafeRawBufferPointer) -> Int {
        let state = state.value
        state.activity &+= 1
        // One access to the head a line: a line after the final head (a trailer) is not read.
        guard state.head.takeLine(line) else { return line.count }
        return headEnded() ? line.count : 0
    }

    /// The final head has been read: the handler reads it and the meter is told. False when the
    /// handler ended the exchange (`state.failure` says why).
    func headEnded() -> Bool {
        let state = state.value
        let failure = state.handler.head(
            status: state.head.status, httpMajorVersion: state.head.version.major,
            keepAlive: state.head.keepsAlive
        ) { name in
            state.head.values(name)
        }
        state.head.dropHeaders()
        if let failure {
            state.failure = failure
            return false
        }
        if let meter {
            state.metered.head = true
            state.metered.declared = state.handler.bytesToCome
            meter.headArrived(
                TransferMeter.Head(
                    origin: origin, status: state.head.status, multiplexed: state.handler.multiplexed,
                    closesConnection: state.handler.closesConnection),
                declared: state.metered.declared)
        }
        return true
    }
}
