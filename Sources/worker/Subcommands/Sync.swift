import ArgumentParser
import Foundation
import Logging
import ManifestSync

/// `worker sync MANIFEST…`: download what is missing or changed, verify, store, report.
struct Sync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Download what is missing or changed, verify every body, store it, and report.")

    @Argument(help: "Manifest files (YAML).")
    var manifests: [String]

    @OptionGroup var common: CommonOptions

    @Flag(name: .customLong("dry-run"), help: "Only show the plan (same as `worker plan`).")
    var dryRun = false

    @Option(help: "Extra attempts for transient failures (connect, reset, truncated body, 5xx, 408, 429).")
    var retries = 3

    @Option(name: .customLong("connect-timeout"), help: "Seconds for a TCP/TLS connect.")
    var connectTimeout = "10"

    @Option(name: .customLong("read-timeout"), help: "Longest silence while reading a body.")
    var readTimeout = "30"

    @Option(name: .customLong("entry-timeout"), help: "Longest one download attempt may take, head to last byte (stops slow drips).")
    var entryTimeout = "10m"

    @Option(name: .customLong("ca-cert"), help: "A PEM file of certificate authorities to trust besides the system's (repeatable).")
    var caCertificates: [String] = []

    @Option(help: "Longest the whole run may take (e.g. 10m); unfinished entries fail as cancelled.")
    var deadline: String?

    @Option(name: .customLong("max-size"), help: "Largest body accepted for one entry (256MiB, 1MB, 1048576).")
    var maxSize = "256MiB"

    @Option(name: .customLong("wait-lock"), help: "Seconds to wait for another run's lock before exit 3 (default: no limit).")
    var waitLock: String?

    @Flag(help: "Remove cache entries no given manifest names.")
    var prune = false

    @Option(name: .customLong("prune-max"), help: "Never prune more than this share of the cache in one run (e.g. 50%).")
    var pruneMax = "50%"

    @Flag(help: "Lift the --prune-max safety limit.")
    var force = false

    @Option(name: .customLong("prune-after"), help: "Prune only entries no manifest has named for this long (grace period, e.g. 3d).")
    var pruneAfter = "0"

    @Flag(help: "Check entries without a hash with conditional requests (ETag / Last-Modified); 304 = unchanged.")
    var revalidate = false

    @Flag(help: "No network: report what is missing or out of date (exit 1 if anything is).")
    var offline = false

    @Flag(name: .shortAndLong, help: "Log each retry and failure as it happens (stderr).")
    var verbose = false

    func validate() throws {
        guard !manifests.isEmpty else { throw ValidationError("give at least one manifest") }
        guard retries >= 0, retries <= 100 else { throw ValidationError("--retries must be between 0 and 100") }
        _ = try parsedSettings()
    }

    /// Turns the textual options into engine settings, or a usage error naming the option.
    func parsedSettings() throws -> (fetch: FetchSettings, waitLock: Double?, deadline: Double?, pruneMax: Double) {
        var fetch = FetchSettings()
        fetch.jobs = common.jobs
        fetch.retry = RetryPolicy(retries: retries)
        fetch.connectTimeout = try positiveDuration(connectTimeout, "--connect-timeout")
        fetch.readTimeout = try positiveDuration(readTimeout, "--read-timeout")
        fetch.entryTimeout = try positiveDuration(entryTimeout, "--entry-timeout")
        for file in caCertificates where !FileManager.default.isReadableFile(atPath: file) {
            throw ValidationError("--ca-cert: cannot read '\(file)'")
        }
        fetch.caCertificates = caCertificates
        guard let size = Units.size(maxSize), size > 0 else {
            throw ValidationError("--max-size: '\(maxSize)' is not a size (e.g. 256MiB, 1MB, 1048576)")
        }
        fetch.maxSize = size
        let wait = try waitLock.map { text in
            guard let seconds = Units.duration(text) else { throw ValidationError("--wait-lock: '\(text)' is not a duration") }
            return seconds
        }
        let runDeadline = try deadline.map { try positiveDuration($0, "--deadline") }
        guard Units.duration(pruneAfter) != nil else { throw ValidationError("--prune-after: '\(pruneAfter)' is not a duration") }
        let share = pruneMax.hasSuffix("%") ? Double(pruneMax.dropLast()).map { $0 / 100 } : Double(pruneMax)
        guard let share, (0...1).contains(share) else {
            throw ValidationError("--prune-max: '\(pruneMax)' is not a percentage from 0% to 100%")
        }
        return (fetch, wait, runDeadline, share)
    }

    private func positiveDuration(_ text: String, _ option: String) throws -> Double {
        guard let seconds = Units.duration(text), seconds > 0 else {
            throw ValidationError("\(option): '\(text)' is not a positive duration (e.g. 30, 30s, 5m)")
        }
        return seconds
    }

    func run() async throws {
        if dryRun {
            try runPlan(manifests: manifests, common: common, prune: prune)
            return
        }
        let settings = try parsedSettings()
        let set = try loadManifests(manifests)
        var options = SyncOptions(cacheDirectory: common.resolvedCacheDirectory())
        options.fetch = settings.fetch
        options.waitLock = settings.waitLock
        options.deadline = settings.deadline
        options.prune = prune
        options.pruneMax = settings.pruneMax
        options.force = force
        options.pruneAfter = Units.duration(pruneAfter) ?? 0
        options.revalidate = revalidate
        options.offline = offline
        options.reportAll = common.reportAll
        options.listLimit = common.reportPath == nil ? TextReportWriter().listLimit : nil
        var logger = Logger(label: "worker")
        logger.logLevel = verbose ? .debug : .warning
        let report: SyncReport
        do {
            report = try await SyncEngine(options: options, logger: logger).sync(set)
        } catch {
            throw cacheExitCode(error)
        }
        let text = TextReportWriter()
        if !common.quiet { Console.out(text.summary(report)) }
        Console.error(text.failures(report))
        try writeReport(report, to: common.reportPath)
        if report.totals.failed > 0 || report.pruneRefused != nil {
            throw ExitCode(ExitStatus.failures)
        }
    }
}
