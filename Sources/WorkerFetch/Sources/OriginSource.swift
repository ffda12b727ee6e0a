import Logging
import WorkerManifest
import WorkerStore
import WorkerSupport

/// The URL's own server over HTTP(S), through the fetch engines (`FetchEngine`): one download with
/// its retries, redirects, resume and `--max-rps` slots, as `DownloadMachine` decides and
/// `OriginDownload` performs; then, for a pinned entry with mirrors, each mirror in order while
/// the one before failed. The origin never misses: a URL that is not there is a failure.
final class OriginSource: ContentSource {
    let store: ContentStore
    let settings: FetchSettings
    let logger: Logger
    let limits: RateLimits?
    /// Heads and body bytes as the transfers go (shared with the run: the window, progress).
    let meter: TransferMeter

    init(store: ContentStore, settings: FetchSettings, logger: Logger, limits: RateLimits?, meter: TransferMeter) {
        self.store = store
        self.settings = settings
        self.logger = logger
        self.limits = limits
        self.meter = meter
    }

    var kind: SourceKind { .origin }

    func serves(_ request: FetchRequest) -> Bool {
        request.origin != nil
    }

    func fetch(_ request: FetchRequest, lane: FetchLane, done: @escaping @Sendable (SourceOutcome) -> Void) {
        if request.mirrors.isEmpty {
            let location = FetchLocation(listed: request.url, url: request.fetchURL, origin: request.origin, signing: request.signing,
                                         authorization: request.authorization)
            let (sent, isPrivate) = request.sent(to: location)
            download(sent, retries: true, lane: lane) { finished in
                done(SourceOutcome(Self.named(finished.result, at: location), attempts: finished.attempts, bytes: finished.bytes,
                                   isPrivate: isPrivate))
            }
            return
        }
        walk(request.locations, from: 0, of: request, lane: lane, tried: Tried(), done: done)
    }

    /// What the locations tried so far did.
    private struct Tried {
        var attempts = 0
        var bytes: Int64 = 0
        var failures: [(location: FetchLocation, failure: FetchFailure)] = []
    }

    /// Tries `locations[index]`, then the next while each fails. Every location but the last gets
    /// one attempt (the next one is the retry); a location whose origin the run gave up on is
    /// passed over without a request (each mirror's origin has its own breaker).
    private func walk(_ locations: [FetchLocation], from index: Int, of request: FetchRequest, lane: FetchLane,
                      tried: Tried, done: @escaping @Sendable (SourceOutcome) -> Void) {
        let location = locations[index]
        let last = index == locations.count - 1
        if let message = lane.gate?.givenUp(location.origin) {
            var tried = tried
            tried.failures.append((location, FetchFailure(.connection, message)))
            if last { return done(Self.failed(tried)) }
            return walk(locations, from: index + 1, of: request, lane: lane, tried: tried, done: done)
        }
        let (sent, isPrivate) = request.sent(to: location)
        download(sent, retries: last, lane: lane) { [self] finished in
            var tried = tried
            tried.attempts += finished.attempts
            tried.bytes += finished.bytes
            switch finished.result {
            case .success(let delivery):
                var outcome = SourceOutcome(.success(delivery), attempts: tried.attempts, bytes: tried.bytes,
                                            servedBy: index == 0 ? nil : location.listed,
                                            isPrivate: isPrivate)
                // Said aloud by the run: the entry's own URL failed (or was given up) and a mirror served.
                if index > 0, let primary = tried.failures.first, primary.location.listed == request.url {
                    outcome.failover = Failover(from: primary.location, primary.failure)
                }
                done(outcome)
            case .failure(let failure):
                tried.failures.append((location, Self.named(failure, at: location)))
                if last || failure.reason == .cancelled || lane.control.isStopped {
                    done(Self.failed(tried))
                } else {
                    logger.debug("trying a mirror", metadata: ["entry.url": "\(Redact.url(request.url))",
                                                               "mirror": "\(Redact.url(locations[index + 1].listed))",
                                                               "fetch.reason": "\(failure.reason.rawValue)"])
                    walk(locations, from: index + 1, of: request, lane: lane, tried: tried, done: done)
                }
            }
        }
    }

    /// A refusal of an `s3://` URL names what the request was signed with (the access key id and
    /// the region, never the secret), or that it was not signed.
    private static func named(_ result: Result<Delivery, FetchFailure>, at location: FetchLocation) -> Result<Delivery, FetchFailure> {
        result.mapError { named($0, at: location) }
    }

    private static func named(_ failure: FetchFailure, at location: FetchLocation) -> FetchFailure {
        guard let status = failure.httpStatus, status == 400 || status == 401 || status == 403,
              let unauthorized = URLKinds.kind(of: location.listed)?.sentWithoutCredentials
        else { return failure }
        let signed = location.signing.map { "signed with \($0)" }
            ?? (location.authorization != nil ? "sent with the credentials it asked for" : unauthorized)
        return FetchFailure(failure.reason, "\(failure.message) (\(signed))", httpStatus: status, retryAfter: failure.retryAfter,
                            detail: failure.detail)
    }

    /// Every location failed: the row names each URL's failure; the reason is the last one's.
    private static func failed(_ tried: Tried) -> SourceOutcome {
        guard let last = tried.failures.last else {
            return SourceOutcome(.failure(FetchFailure(.io, "no URL to fetch")), attempts: tried.attempts, bytes: tried.bytes)
        }
        if last.failure.reason == .cancelled || tried.failures.count == 1 {
            return SourceOutcome(.failure(last.failure), attempts: tried.attempts, bytes: tried.bytes)
        }
        let each = tried.failures.map { tried in
            let location = tried.location
            let via = location.url == location.listed ? "" : " (as \(Redact.url(location.url)))"
            return "\(Redact.url(location.listed))\(via): \(tried.failure.message)"
        }
        let failure = FetchFailure(last.failure.reason, "every URL failed: " + each.joined(separator: "; "),
                                   httpStatus: last.failure.httpStatus, detail: last.failure.detail)
        return SourceOutcome(.failure(failure), attempts: tried.attempts, bytes: tried.bytes)
    }

    /// One URL with its retries (or one attempt), redirects and resume.
    private func download(_ request: FetchRequest, retries: Bool, lane: FetchLane,
                          done: @escaping @Sendable (DownloadMachine.Finished) -> Void) {
        let rules = DownloadMachine.Rules(retry: retries ? settings.retry : RetryPolicy(retries: 0),
                                          entryTimeout: settings.entryTimeout,
                                          maxRedirects: settings.maxRedirects,
                                          pacesRequests: limits?.requestsPerSecond != nil,
                                          reportsToGate: lane.gate != nil,
                                          rewrite: settings.locator.rewrite)
        OriginDownload(request: request, rules: rules, source: self, lane: lane, done: done).start()
    }
}
