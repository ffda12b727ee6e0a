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

    @OptionGroup var lock: LockOptions

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

    @Option(help: "Progress on stderr: auto (unless --quiet), always, never. A live line on a terminal, a plain line every 5 s elsewhere.")
    var progress = "auto"

    @Option(name: .customLong("log-format"), help: "Logs on stderr as text or json.")
    var logFormat = "text"

    @Option(name: .customLong("junit"), help: "Write JUnit XML: one test case per entry checked.")
    var junitPath: String?

    @Option(name: .customLong("summary-md"), help: "Write a Markdown summary (default in GitHub Actions: appended to $GITHUB_STEP_SUMMARY).")
    var summaryPath: String?

    @Option(name: .customLong("metrics"), help: "Write Prometheus text format (node_exporter textfile collector), atomically.")
    var metricsPath: String?

    @Option(name: .customLong("report-html"), help: "Write a self-contained HTML page with thumbnails of what changed or failed.")
    var htmlPath: String?

    @Option(name: .customLong("max-failures"), help: "Exit 0 while failures stay within N or N% of the entries.")
    var maxFailures = "0"

    @Option(help: "Handle only shard I of N (0-based; default from JOB_COMPLETION_INDEX / JOB_COMPLETION_COUNT).")
    var shard: String?

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
        let wait = try lock.seconds()
        let runDeadline = try deadline.map { try positiveDuration($0, "--deadline") }
        guard ProgressPrinter.Mode(rawValue: progress) != nil else { throw ValidationError("--progress: auto, always or never") }
        guard ["text", "json"].contains(logFormat) else { throw ValidationError("--log-format: text or json") }
        _ = try failureBudget()
        _ = try resolvedShard()
        guard Units.duration(pruneAfter) != nil else { throw ValidationError("--prune-after: '\(pruneAfter)' is not a duration") }
        let share = pruneMax.hasSuffix("%") ? Double(pruneMax.dropLast()).map { $0 / 100 } : Double(pruneMax)
        guard let share, (0...1).contains(share) else {
            throw ValidationError("--prune-max: '\(pruneMax)' is not a percentage from 0% to 100%")
        }
        return (fetch, wait, runDeadline, share)
    }

    /// `--max-failures`: a count, or a share of the entries (`5%`).
    func failureBudget() throws -> FailureBudget {
        guard let budget = FailureBudget(maxFailures) else {
            throw ValidationError("--max-failures: '\(maxFailures)' is not a count or a percentage (e.g. 10 or 2%)")
        }
        return budget
    }

    /// `--shard I/N`, else Kubernetes Indexed Job variables, else everything.
    func resolvedShard() throws -> Shard {
        if let shard {
            guard let parsed = Shard(shard) else { throw ValidationError("--shard: '\(shard)' is not I/N with 0 ≤ I < N") }
            return parsed
        }
        let environment = ProcessInfo.processInfo.environment
        guard let index = environment["JOB_COMPLETION_INDEX"] else { return .all }
        guard let count = environment["JOB_COMPLETION_COUNT"] else {
            throw ValidationError("JOB_COMPLETION_INDEX is set: set JOB_COMPLETION_COUNT to the Job's completions too (or pass --shard I/N)")
        }
        guard let parsed = Shard("\(index)/\(count)") else {
            throw ValidationError("JOB_COMPLETION_INDEX/JOB_COMPLETION_COUNT '\(index)/\(count)' is not I/N with 0 ≤ I < N")
        }
        return parsed
    }

    private func positiveDuration(_ text: String, _ option: String) throws -> Double {
        guard let seconds = Units.duration(text), seconds > 0 else {
            throw ValidationError("\(option): '\(text)' is not a positive duration (e.g. 30, 30s, 5m)")
        }
        return seconds
    }

    func run() async throws {
        try checkOutputs([(.report, common.reportPath), (.junit, junitPath), (.summary, summaryPath),
                          (.metrics, metricsPath), (.html, htmlPath)], manifests: manifests)
        if dryRun {
            try runPlan(manifests: manifests, common: common, prune: prune)
            return
        }
        let settings = try parsedSettings()
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
        options.shard = try resolvedShard()
        options.failureBudget = try failureBudget()
        options.outputs.report = common.reportPath
        options.outputs.reportAll = common.reportAll
        options.outputs.junit = junitPath
        options.outputs.metrics = metricsPath
        options.outputs.html = htmlPath
        options.outputs.summary = summaryPath
        if summaryPath == nil, let github = ProcessInfo.processInfo.environment["GITHUB_STEP_SUMMARY"], !github.isEmpty {
            options.outputs.appendedSummary = github
        }
        let printer = ProgressPrinter(mode: ProgressPrinter.Mode(rawValue: progress) ?? .auto, quiet: common.quiet)
        if let printer { options.onProgress = { printer.update($0) } }
        defer { printer?.stop() }
        let json = logFormat == "json"
        LoggingSystem.bootstrap { label in
            json ? JSONLogHandler(label: label) as any LogHandler : StreamLogHandler.standardError(label: label)
        }
        var logger = Logger(label: "worker")
        logger.logLevel = verbose ? .debug : .warning
        let engine = SyncEngine(options: options, logger: logger)
        // The index is read on another thread while the manifests are parsed.
        let prefetched = engine.prefetch(manifestPaths: manifests)
        let set: ManifestSet
        do {
            set = try loadManifests(manifests)
        } catch {
            _ = await prefetched.value
            throw error
        }
        let report: SyncReport
        do {
            report = try await engine.sync(set, prefetched: prefetched)
        } catch {
            throw cacheExitCode(error)
        }
        printer?.stop()
        let text = TextReportWriter()
        if !common.quiet { Console.out(text.summary(report)) }
        for line in text.failureLines(report, reportPath: common.reportPath) { Console.error(line) }
        if !report.succeeded { throw ExitCode(ExitStatus.failures) }
    }
}
