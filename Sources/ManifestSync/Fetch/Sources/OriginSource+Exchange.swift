import FoundationEssentials
import Glibc

/// One HTTP exchange: the request's headers (validators, a resume range), `--max-rps`, the
/// response through a `CurlTransfer` and its `ResponseHandler`, and the redirects we follow ourselves.
extension OriginSource {
    /// One request and, through redirects we follow ourselves, the hops after it.
    func exchange(_ request: FetchRequest, url current: String, hop: Int, visited: Set<String>, sendHeaders: Bool,
                  deadline: Double, bytes: Int64, control: FetchControl, on engine: CurlEngine,
                  finished: @escaping @Sendable (AttemptOutcome) -> Void) {
        var lines: [String] = []
        if sendHeaders {
            for header in request.headers { lines.append(header.name + ": " + header.value) }
        }
        if let etag = request.etag { lines.append("If-None-Match: " + etag) }
        // A body cut off before: ask for the rest, if it is still the same version.
        let resume = request.isConditional ? nil : store.partials.resume(for: request.url)
        if let resume {
            lines.append("Range: bytes=\(resume.offset)-")
            lines.append("If-Range: " + resume.validator)
        }
        if let lastModified = request.lastModified { lines.append("If-Modified-Since: " + lastModified) }
        let headers = lines
        // --max-rps: this request takes its origin's next slot, waiting for it if need be.
        if let limits, case let delay = limits.requestDelay(Self.origin(of: current, for: request)), delay > 0 {
            control.wait(delay, on: engine) { waited in
                guard waited else {
                    finished(AttemptOutcome(result: .failure(FetchFailure(.cancelled, control.stopReason)), bytes: bytes))
                    return
                }
                self.send(headers, request, url: current, hop: hop, visited: visited, sendHeaders: sendHeaders,
                          deadline: deadline, bytes: bytes, resume: resume, control: control, on: engine,
                          finished: finished)
            }
            return
        }
        send(headers, request, url: current, hop: hop, visited: visited, sendHeaders: sendHeaders, deadline: deadline,
             bytes: bytes, resume: resume, control: control, on: engine, finished: finished)
    }

    /// Sends one request and handles its outcome (a redirect continues with `exchange`).
    private func send(_ headers: [String], _ request: FetchRequest, url current: String, hop: Int, visited: Set<String>,
                      sendHeaders: Bool, deadline: Double, bytes: Int64, resume: PartialDownloads.Resume?,
                      control: FetchControl, on engine: CurlEngine,
                      finished: @escaping @Sendable (AttemptOutcome) -> Void) {
        let handler = ResponseHandler(store: store, expected: request.expected, maxSize: settings.maxSize,
                                      conditional: request.isConditional, deadline: deadline,
                                      entryTimeout: settings.entryTimeout, url: request.url, resume: resume,
                                      resumeThreshold: settings.resumeThreshold)
        let transfer = CurlTransfer(url: current, requestHeaders: headers, deadline: deadline, handler: handler,
                                    engine: engine, limits: limits, meter: meter, origin: request.origin) { transfer, exchanged in
            control.unregister(transfer.controlToken)
            self.exchanged(exchanged, request, url: current, hop: hop, visited: visited, sendHeaders: sendHeaders,
                           deadline: deadline, bytes: bytes, control: control, on: engine, finished: finished)
        }
        guard let registered = control.register(.transfer(transfer, on: engine)) else {
            finished(AttemptOutcome(result: .failure(FetchFailure(.cancelled, control.stopReason)), bytes: bytes))
            return
        }
        transfer.controlToken = registered
        engine.start(transfer)
    }

    /// An exchange ended: its body, a status, or a redirect to follow.
    private func exchanged(_ exchanged: CurlTransfer.Outcome, _ request: FetchRequest, url current: String, hop: Int,
                           visited: Set<String>, sendHeaders: Bool, deadline: Double, bytes: Int64,
                           control: FetchControl, on engine: CurlEngine,
                           finished: @escaping @Sendable (AttemptOutcome) -> Void) {
        let received = bytes + exchanged.bytes
        // Every outcome of this exchange says whether its response came over HTTP/2.
        let finished: @Sendable (AttemptOutcome) -> Void = { outcome in
            var outcome = outcome
            outcome.multiplexed = exchanged.multiplexed
            outcome.closesConnection = exchanged.closesConnection
            finished(outcome)
        }
        switch exchanged.result {
        case .failure(let failure):
            finished(AttemptOutcome(result: .failure(failure), bytes: received))
        case .success(.body(let file, let etag, let lastModified)):
            finished(AttemptOutcome(result: .success(.body(FetchedBody(
                temporaryPath: file.path, sha256: file.sha256, size: file.size,
                etag: etag, lastModified: lastModified))), bytes: received))
        case .success(.notModified):
            finished(AttemptOutcome(result: .success(.notModified), bytes: received))
        case .success(.status(let status, let retryAfter)):
            finished(AttemptOutcome(result: .failure(FetchFailure(.httpStatus, "HTTP \(status)", httpStatus: status,
                                                                  retryAfter: retryAfter)), bytes: received))
        case .success(.redirect(let status, let location)):
            // The first hop's URL joins the visited set only when there is a redirect.
            var visited = hop == 0 ? [current] : visited
            switch Fetcher.redirectTarget(from: current, location: location, status: status, hop: hop,
                                       maxRedirects: settings.maxRedirects, visited: &visited) {
            case .failure(let failure):
                finished(AttemptOutcome(result: .failure(failure), bytes: received))
            case .success(let next):
                // Manifest headers (credentials) never follow a redirect to another origin.
                exchange(request, url: next, hop: hop + 1, visited: visited,
                         sendHeaders: sendHeaders && Fetcher.origin(of: next) == request.origin,
                         deadline: deadline, bytes: received, control: control, on: engine, finished: finished)
            }
        }
    }

    /// The origin of `url`, the request's own URL or a hop after it (the request knows its own).
    private static func origin(of url: String, for request: FetchRequest) -> String {
        if url == request.url, let origin = request.origin { return origin }
        return Fetcher.origin(of: url)
    }
}
