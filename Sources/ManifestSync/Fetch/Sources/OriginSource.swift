import Logging

/// The URL's own server over HTTP(S), through the fetch engines (`FetchEngine`): one download with
/// its retries, redirects, resume and `--max-rps` slots, as `DownloadMachine` decides and
/// `OriginDownload` performs. The origin never misses: a URL that is not there is a failure.
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
        let rules = DownloadMachine.Rules(retry: settings.retry, entryTimeout: settings.entryTimeout,
                                          maxRedirects: settings.maxRedirects,
                                          pacesRequests: limits?.requestsPerSecond != nil,
                                          reportsToGate: lane.gate != nil)
        OriginDownload(request: request, rules: rules, source: self, lane: lane) { finished in
            done(SourceOutcome(finished.result, attempts: finished.attempts, bytes: finished.bytes))
        }.start()
    }
}
