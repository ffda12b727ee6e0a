import Logging
import WorkerManifest
import WorkerStore
import WorkerSupport

/// The origin's locations over HTTP(S) (the URL, a mirror), through the fetch engines
/// (`FetchEngine`): one location's download with its retries (or one attempt), redirects, resume
/// and `--max-rps` slots, as `DownloadMachine` decides and `OriginDownload` performs (`download`, beside it). Which
/// location is tried, and when the next one is, `FallbackWalk` decides. A location never misses:
/// a URL that is not there is a failure.
final class OriginSource: Sendable {
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

    /// A refusal of an `s3://` URL names what the request was signed with (the access key id and
    /// the region, never the secret), or that it was not signed.
    static func named(_ failure: FetchFailure, at location: FetchLocation) -> FetchFailure {
        guard let status = failure.httpStatus, status == 400 || status == 401 || status == 403,
            let unauthorized = URLKinds.kind(of: location.listed)?.sentWithoutCredentials
        else { return failure }
        let signed =
            location.signing.map { "signed with \($0)" }
            ?? location.credentialUser.map { "the registry refused the credentials for \($0)" }
            ?? (location.authorization != nil ? "sent with an anonymous token" : unauthorized)
        return FetchFailure(
            failure.reason, "\(failure.message) (\(signed))", httpStatus: status, retryAfter: failure.retryAfter,
            detail: failure.detail)
    }
}
