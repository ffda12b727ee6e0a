import ArgumentParser
import FoundationEssentials
import Glibc
import CurlTransport
import ManifestSync

/// How downloads talk to origins: concurrency, retries, timeouts, limits, trust.
struct NetworkOptions: ParsableArguments {
    @Option(name: [.short, .customLong("jobs")], help: "HTTP/1.1 connections per origin, opened as answers come (slow start); local files at once (at most 16).")
    var jobs = 50

    @Option(name: .customLong("max-streams"), help: "Requests in flight on one HTTP/2 connection; an origin gets one connection per fetch thread (one per core, at most 4), and the server's own limit applies too.")
    var maxStreams = 100

    @Option(help: "Extra attempts for transient failures (connect, reset, truncated body, 5xx, 408, 429).")
    var retries = 3

    @Option(name: .customLong("connect-timeout"), help: "Seconds for a TCP/TLS connect.")
    var connectTimeout = "10"

    @Option(name: .customLong("read-timeout"), help: "Longest silence while reading a body.")
    var readTimeout = "30"

    @Option(name: .customLong("entry-timeout"), help: "Longest one download attempt may take, head to last byte (stops slow drips).")
    var entryTimeout = "10m"

    @Option(name: .customLong("max-size"), help: "Largest body accepted for one entry (256MiB, 1MB, 1048576).")
    var maxSize = "256MiB"

    @Option(name: .customLong("limit-rate"), help: "Bytes per second for the whole run, shared by all connections (curl's forms: 256K, 1M; K = 1024).")
    var limitRate: String?

    @Option(name: .customLong("max-rps"), help: "Requests per second to each origin.")
    var maxRequestsPerSecond: Double?

    @Option(name: .customLong("ca-cert"), help: "A PEM file of certificate authorities to trust besides the system's (repeatable).")
    var caCertificates: [String] = []

    @OptionGroup(title: "Remote cache") var remote: RemoteCacheOptions

    func validate() throws {
        _ = try settings()
    }

    /// The fetch settings, or a usage error naming the option.
    func settings() throws -> FetchSettings {
        guard (1...1024).contains(jobs) else { throw ValidationError("--jobs must be between 1 and 1024") }
        guard (1...1000).contains(maxStreams) else { throw ValidationError("--max-streams must be between 1 and 1000") }
        guard (0...100).contains(retries) else { throw ValidationError("--retries must be between 0 and 100") }
        var fetch = FetchSettings()
        fetch.transport = CurlTransport()
        fetch.jobs = jobs
        fetch.maxStreams = maxStreams
        fetch.retry = RetryPolicy(retries: retries)
        fetch.connectTimeout = try positiveDuration(connectTimeout, "--connect-timeout")
        fetch.readTimeout = try positiveDuration(readTimeout, "--read-timeout")
        fetch.entryTimeout = try positiveDuration(entryTimeout, "--entry-timeout")
        for file in caCertificates where !FileManager.default.isReadableFile(atPath: file) {
            throw ValidationError("--ca-cert: cannot read '\(file)'")
        }
        fetch.caCertificates = caCertificates
        fetch.remoteCache = try remote.settings()
        guard let size = Units.size(maxSize), size > 0 else {
            throw ValidationError("--max-size: '\(maxSize)' is not a size (e.g. 256MiB, 1MB, 1048576)")
        }
        fetch.maxSize = size
        if let limitRate {
            guard let rate = Units.rate(limitRate), rate > 0 else {
                throw ValidationError("--limit-rate: '\(limitRate)' is not a rate (e.g. 256K, 1M, 500000)")
            }
            fetch.limitRate = rate
        }
        if let maxRequestsPerSecond {
            guard maxRequestsPerSecond >= 0.001, maxRequestsPerSecond <= 1_000_000 else {
                throw ValidationError("--max-rps: give a number of requests per second from 0.001 to 1000000")
            }
            fetch.maxRequestsPerSecond = maxRequestsPerSecond
        }
        return fetch
    }
}

/// A duration option that must be above zero.
func positiveDuration(_ text: String, _ option: String) throws -> Double {
    guard let seconds = Units.duration(text), seconds > 0 else {
        throw ValidationError("\(option): '\(text)' is not a positive duration (e.g. 30, 30s, 5m)")
    }
    return seconds
}
