import ArgumentParser
import CurlTransport
import FoundationEssentials
import Glibc
import WorkerFetch

/// How downloads talk to origins: concurrency, retries, timeouts, limits, trust.
struct NetworkOptions: ParsableArguments {
    @Option(
        name: [.short, .customLong("jobs")],
        help: "HTTP/1.1 connections per origin, opened as answers come (slow start); local files at once (at most 16).")
    var jobs = 50

    @Option(
        name: .customLong("max-streams"),
        help:
            "Requests in flight on one HTTP/2 connection; an origin gets one connection per fetch thread (one per core, at most 4), and the server's own limit applies too."
    )
    var maxStreams = 100

    @Option(help: "Extra attempts for transient failures (connect, reset, truncated body, 5xx, 408, 429).")
    var retries = 3

    @Option(name: .customLong("connect-timeout"), help: "Seconds for a TCP/TLS connect, above 0 (10, 10s, 1m).")
    var connectTimeout = PositiveSeconds(10)

    @Option(name: .customLong("read-timeout"), help: "Longest silence while reading a body, above 0 (30, 30s, 1m).")
    var readTimeout = PositiveSeconds(30)

    @Option(
        name: .customLong("entry-timeout"), help: "Longest one download attempt may take, head to last byte (stops slow drips), above 0.")
    var entryTimeout = PositiveSeconds(600)

    @Option(name: .customLong("max-size"), help: "Largest body accepted for one entry, above 0 (256MiB, 1MB, 1048576).")
    var maxSize = ByteSize(value: 256 << 20, text: "256MiB")

    @Option(
        name: .customLong("limit-rate"),
        help: "Bytes per second for the whole run, shared by all connections (curl's forms: 256K, 1M; K = 1024).")
    var limitRate: ByteRate?

    @Option(name: .customLong("max-rps"), help: "Requests per second to each origin (0.001 to 1000000).")
    var maxRequestsPerSecond: RequestRate?

    @Option(name: .customLong("ca-cert"), help: "A PEM file of certificate authorities to trust besides the system's (repeatable).")
    var caCertificates: [String] = []

    @Option(
        name: .customLong("rewrite"),
        help: ArgumentHelp(
            "Fetch URLs under FROM (any spelling of its scheme, host and port; an s3://BUCKET/PREFIX/ too) from TO + the rest instead; FROM's host is never contacted, and the cache and reports keep the manifest's URLs (repeatable; the first matching rule wins). Also $WORKER_REWRITE (rules separated by spaces, after these).",
            valueName: "FROM=TO"))
    var rewrite: [String] = []

    @Flag(
        name: .customLong("rewrite-strict"),
        help:
            "Refuse, before any request, every URL no --rewrite rule covers (except --allow-origin ones); redirects too. Also WORKER_REWRITE_STRICT=1."
    )
    var rewriteStrict = false

    @Option(
        name: .customLong("allow-origin"),
        help: ArgumentHelp("An origin a --rewrite-strict run may reach without a rule (repeatable).", valueName: "URL"))
    var allowOrigin: [String] = []

    @OptionGroup(title: "Kinds of URL") var kinds: KindOptions

    @OptionGroup(title: "Remote cache") var remote: RemoteCacheOptions

    /// The fetch settings, made once as the command starts, or a usage error naming the option.
    func settings(for command: any ParsableCommand.Type) throws(CommandFailure) -> FetchSettings {
        try optionChecked(for: command) { try settings() }
    }

    private func settings() throws -> FetchSettings {
        guard (1...1024).contains(jobs) else { throw ValidationError("--jobs must be between 1 and 1024") }
        guard (1...1000).contains(maxStreams) else { throw ValidationError("--max-streams must be between 1 and 1000") }
        guard (0...100).contains(retries) else { throw ValidationError("--retries must be between 0 and 100") }
        var fetch = FetchSettings()
        fetch.transport = CurlTransport()
        fetch.jobs = jobs
        fetch.maxStreams = maxStreams
        fetch.retry = RetryPolicy(retries: retries)
        fetch.connectTimeout = connectTimeout.value
        fetch.readTimeout = readTimeout.value
        fetch.entryTimeout = entryTimeout.value
        for file in caCertificates where !FileManager.default.isReadableFile(atPath: file) {
            throw ValidationError("--ca-cert: cannot read '\(file)'")
        }
        fetch.caCertificates = caCertificates
        fetch.remoteCache = try remote.settings()
        fetch.locator.rewrite = try Self.rewrite(rewrite)
        fetch.locator.rewrite.strict = rewriteStrict || ProcessInfo.processInfo.environment["WORKER_REWRITE_STRICT"] == "1"
        if let problem = fetch.locator.rewrite.allow(allowOrigin) { throw ValidationError(problem.description) }
        fetch.locator.options = kinds.options
        guard maxSize.value > 0 else { throw ValidationError("--max-size must be above 0") }
        fetch.maxSize = maxSize.value
        fetch.limitRate = limitRate?.value
        fetch.maxRequestsPerSecond = maxRequestsPerSecond?.value
        return fetch
    }

    /// `--rewrite` rules, then `WORKER_REWRITE`'s; a usage error names the rule that cannot be used.
    static func rewrite(_ given: [String], environment: [String: String] = ProcessInfo.processInfo.environment) throws -> URLRewrite {
        let fromEnvironment = (environment["WORKER_REWRITE"] ?? "").split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" })
        switch URLRewrite.parse(given + fromEnvironment.map(String.init)) {
        case .success(let rewrite): return rewrite
        case .failure(let error): throw ValidationError("--rewrite: \(error)")
        }
    }
}
