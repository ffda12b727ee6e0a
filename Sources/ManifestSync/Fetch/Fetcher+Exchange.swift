import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// One HTTP exchange: the request's headers (validators, a resume range), `--max-rps`, the
/// response through `DownloadDelegate` and its `ResponseHandler`, and the redirects we follow ourselves.
extension Fetcher {
    /// One request and, through redirects we follow ourselves, the hops after it.
    func exchange(_ request: FetchRequest, url current: String, hop: Int, visited: Set<String>,
                          sendHeaders: Bool, deadline: NIODeadline, bytes: Int64, on loop: any EventLoop,
                          control: FetchControl, finished: @escaping @Sendable (AttemptOutcome) -> Void) {
        var headers = HTTPHeaders()
        headers.add(name: "User-Agent", value: "worker/1")
        if sendHeaders {
            for header in request.headers { headers.add(name: header.name, value: header.value) }
        }
        if let etag = request.etag { headers.add(name: "If-None-Match", value: etag) }
        // A body cut off before: ask for the rest, if it is still the same version.
        let resume = request.isConditional ? nil : store.partials.resume(for: request.url)
        if let resume {
            headers.add(name: "Range", value: "bytes=\(resume.offset)-")
            headers.add(name: "If-Range", value: resume.validator)
        }
        if let lastModified = request.lastModified { headers.add(name: "If-Modified-Since", value: lastModified) }
        let http: HTTPClient.Request
        do {
            http = try HTTPClient.Request(url: current, headers: headers)
        } catch {
            finished(AttemptOutcome(result: .failure(FailureClassifier.classify(error)), bytes: bytes))
            return
        }
        // --max-rps: this request takes its origin's next slot, waiting for it if need be.
        if let limits, case let wait = limits.requestDelay(Self.origin(of: current, for: request)), wait > 0 {
            let timer = loop.scheduleTask(in: .nanoseconds(Int64(wait * 1e9))) {}
            let token = control.register(.timer(timer))
            timer.futureResult.whenComplete { waited in
                control.unregister(token)
                guard case .success = waited else {
                    finished(AttemptOutcome(result: .failure(FetchFailure(.cancelled, control.stopReason)), bytes: bytes))
                    return
                }
                self.send(http, request, url: current, hop: hop, visited: visited, sendHeaders: sendHeaders,
                          deadline: deadline, bytes: bytes, resume: resume, on: loop, control: control, finished: finished)
            }
            return
        }
        send(http, request, url: current, hop: hop, visited: visited, sendHeaders: sendHeaders, deadline: deadline,
             bytes: bytes, resume: resume, on: loop, control: control, finished: finished)
    }

    /// Sends one request and handles its outcome (a redirect continues with `exchange`).
    private func send(_ http: HTTPClient.Request, _ request: FetchRequest, url current: String, hop: Int, visited: Set<String>,
                      sendHeaders: Bool, deadline: NIODeadline, bytes: Int64, resume: PartialDownloads.Resume?,
                      on loop: any EventLoop, control: FetchControl,
                      finished: @escaping @Sendable (AttemptOutcome) -> Void) {
        let delegate = DownloadDelegate(
            handler: ResponseHandler(store: store, expected: request.expected, maxSize: settings.maxSize,
                                     conditional: request.isConditional, deadline: deadline,
                                     entryTimeout: settings.entryTimeout, url: request.url, resume: resume,
                                     resumeThreshold: settings.resumeThreshold),
            limits: limits)
        // The delegate runs on `loop`: when called from one of the client's loops that is the
        // current one, so a finished download and the next one share a thread.
        let origin = Self.origin(of: current, for: request)
        let multiplexed = multiplexedOrigins.withLock { $0.contains(origin) }
        let task = client.execute(request: http, delegate: delegate,
                                  eventLoop: multiplexed ? .delegateAndChannel(on: loop) : .delegate(on: loop),
                                  deadline: deadline)
        let token = control.register(.request(task))
        // Every outcome of this exchange says whether its response came over HTTP/2.
        let finished: @Sendable (AttemptOutcome) -> Void = { outcome in
            var outcome = outcome
            outcome.multiplexed = delegate.handler.multiplexed
            outcome.closesConnection = delegate.handler.closesConnection
            if delegate.handler.multiplexed, !multiplexed {
                self.multiplexedOrigins.withLock { _ = $0.insert(origin) }
            }
            finished(outcome)
        }
        task.futureResult.whenComplete { completion in
            control.unregister(token)
            let received = bytes + delegate.handler.bytesReceived
            let outcome: ExchangeOutcome
            switch completion {
            case .failure(let error):
                finished(AttemptOutcome(result: .failure(FailureClassifier.classify(error)), bytes: received))
                return
            case .success(let value):
                outcome = value
            }
            switch outcome {
            case .body(let file, let etag, let lastModified):
                finished(AttemptOutcome(result: .success(.body(FetchedBody(
                    temporaryPath: file.path, sha256: file.sha256, size: file.size,
                    etag: etag, lastModified: lastModified))), bytes: received))
            case .notModified:
                finished(AttemptOutcome(result: .success(.notModified), bytes: received))
            case .status(let status, let retryAfter):
                finished(AttemptOutcome(result: .failure(FetchFailure(.httpStatus, "HTTP \(status)", httpStatus: status,
                                                                      retryAfter: retryAfter)), bytes: received))
            case .redirect(let status, let location):
                // The first hop's URL joins the visited set only when there is a redirect.
                var visited = hop == 0 ? [current] : visited
                switch Self.redirectTarget(from: current, location: location, status: status, hop: hop,
                                           maxRedirects: self.settings.maxRedirects, visited: &visited) {
                case .failure(let failure):
                    finished(AttemptOutcome(result: .failure(failure), bytes: received))
                case .success(let next):
                    // Manifest headers (credentials) never follow a redirect to another origin.
                    self.exchange(request, url: next, hop: hop + 1, visited: visited,
                                  sendHeaders: sendHeaders && Self.origin(of: next) == Self.origin(of: request.url),
                                  deadline: deadline, bytes: received, on: loop, control: control, finished: finished)
                }
            }
        }
    }

    /// The origin of `url`, the request's own URL or a hop after it (the request knows its own).
    private static func origin(of url: String, for request: FetchRequest) -> String {
        if url == request.url, let origin = request.origin { return origin }
        return origin(of: url)
    }
}
