/// Limits and timeouts of the fetch stage.
public struct FetchSettings: Sendable {
    /// HTTP/1.1 connections per origin (reached by slow start), and local files at once (at most
    /// `DownloadSchedule.localFilesAtOnce`). curl's default: with slow start and the halving on
    /// 429/503 a small server is never hit by that many at once.
    public var jobs = 50
    /// Requests in flight on one HTTP/2 connection (`--max-streams`); an origin gets one connection
    /// per fetch engine, so this many times the engines in all. The server's own limit
    /// (SETTINGS_MAX_CONCURRENT_STREAMS) applies to each connection (beyond it libcurl opens another).
    public var maxStreams = 100
    public var retry = RetryPolicy()
    public var connectTimeout = 10.0
    /// Longest silence while reading a body.
    public var readTimeout = 30.0
    /// Longest one request (head and body) may take.
    public var entryTimeout = 600.0
    public var maxSize: Int64 = 256 << 20
    var maxRedirects = 5
    /// Bodies cut off after this many bytes are kept and resumed with `Range` + `If-Range`.
    public var resumeThreshold: Int64 = 1 << 20
    /// PEM files of certificate authorities to trust besides the system's (an internal CA).
    public var caCertificates: [String] = []
    /// Body bytes per second for the whole run (`--limit-rate`); nil: no limit.
    public var limitRate: Int64?
    /// Requests per second to each origin (`--max-rps`); nil: no limit.
    public var maxRequestsPerSecond: Double?
    /// How requests reach the network (the command line gives `CurlTransport`); a run that must
    /// download without one fails as `EngineStartFailure.library`.
    public var transport: (any Transport)?
    /// Where URLs are fetched from: `--rewrite FROM=TO` (the cache keeps the URLs) and how
    /// `s3://` URLs are reached.
    public var locator = Locator()
    /// The shared tier asked before the origins and given what they deliver (`--remote-cache`).
    public var remoteCache: RemoteCacheSettings?

    public init() {}
}
