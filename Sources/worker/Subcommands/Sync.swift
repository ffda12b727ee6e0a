import ArgumentParser
import Foundation
import Logging
import ManifestSync

/// `worker sync MANIFEST…`: download what is missing or changed, verify, store, report.
struct Sync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Download what is missing or changed, verify every body, store it, and report.",
        discussion: """
            Examples:
              worker sync manifests/avatars.yaml
              worker sync manifests/*.yaml --report report.json --max-failures 1% --deadline 20m
              worker sync manifests/avatars.yaml --refresh --limit-rate 1M --max-rps 20
            """)

    @Argument(help: "Manifest files (YAML).")
    var manifests: [String]

    @OptionGroup(title: "Cache") var cache: CacheOptions

    @Flag(name: .customLong("dry-run"), help: "Only show the plan (same as `worker plan`).")
    var dryRun = false

    @Flag(help: "Download and verify every selected entry again, whatever the index says (a changed body is updated, the same body unchanged).")
    var refresh = false

    @Flag(help: "Check entries without a hash with conditional requests (ETag / Last-Modified); 304 = unchanged.")
    var revalidate = false

    @Flag(help: "No network: report what is missing or out of date (exit 1 if anything is).")
    var offline = false

    @Flag(help: "Remove cache entries no given manifest names.")
    var prune = false

    @Option(name: .customLong("prune-max"), help: "Never prune more than this share of the cache in one run (e.g. 50%).")
    var pruneMax = "50%"

    @Flag(help: "Lift the --prune-max safety limit.")
    var force = false

    @Option(name: .customLong("prune-after"), help: "Prune only entries no manifest has named for this long (grace period, e.g. 3d).")
    var pruneAfter = "0"

    @OptionGroup(title: "Network") var network: NetworkOptions

    @OptionGroup(title: "Reports and output") var output: OutputOptions

    @OptionGroup(title: "Scheduling") var scheduling: SchedulingOptions

    func validate() throws {
        guard !manifests.isEmpty else { throw ValidationError("give at least one manifest") }
        _ = try pruneShare()
        guard Units.duration(pruneAfter) != nil else { throw ValidationError("--prune-after: '\(pruneAfter)' is not a duration") }
    }

    private func pruneShare() throws -> Double {
        let share = pruneMax.hasSuffix("%") ? Double(pruneMax.dropLast()).map { $0 / 100 } : Double(pruneMax)
        guard let share, (0...1).contains(share) else {
            throw ValidationError("--prune-max: '\(pruneMax)' is not a percentage from 0% to 100%")
        }
        return share
    }

    /// Every option as the engine's settings.
    private func syncOptions() throws -> SyncOptions {
        var options = SyncOptions(cacheDirectory: cache.resolved)
        options.fetch = try network.settings()
        options.waitLock = try scheduling.lock.seconds()
        options.deadline = try scheduling.deadlineSeconds()
        options.failureBudget = try scheduling.failureBudget()
        options.shard = try scheduling.resolvedShard()
        options.prune = prune
        options.pruneMax = try pruneShare()
        options.force = force
        options.pruneAfter = Units.duration(pruneAfter) ?? 0
        options.revalidate = revalidate
        options.refresh = refresh
        options.offline = offline
        options.reportAll = output.reportAll
        options.listLimit = output.reportPath == nil ? TextReportWriter().listLimit : nil
        options.outputs = try output.outputs(manifests: manifests)
        return options
    }

    func run() async throws {
        if dryRun {
            try runPlan(manifests: manifests, cacheDirectory: cache.resolved, reportPath: output.reportPath,
                        reportAll: output.reportAll, quiet: output.quiet, prune: prune)
            return
        }
        var options = try syncOptions()
        let printer = ProgressPrinter(mode: ProgressPrinter.Mode(rawValue: output.progress) ?? .auto, quiet: output.quiet)
        if let printer { options.onProgress = { printer.update($0) } }
        defer { printer?.stop() }
        let engine = SyncEngine(options: options, logger: makeLogger(output))
        let report: SyncReport
        do {
            report = try await engine.sync(manifestPaths: manifests)
        } catch .manifest(let diagnostics) {
            Console.error(diagnostics.description)
            throw ExitCode(ExitStatus.usage)
        } catch .cache(let error) {
            throw cacheExitCode(error)
        }
        printer?.stop()
        let text = TextReportWriter()
        if !output.quiet { Console.out(text.summary(report)) }
        for line in text.failureLines(report, reportPath: output.reportPath) { Console.error(line) }
        if !report.succeeded { throw ExitCode(ExitStatus.failures) }
    }
}

/// The engine's logger: JSON lines or text on stderr, warnings unless --verbose.
func makeLogger(_ output: OutputOptions) -> Logger {
    let json = output.logFormat == "json"
    LoggingSystem.bootstrap { label in
        json ? JSONLogHandler(label: label) as any LogHandler : StreamLogHandler.standardError(label: label)
    }
    var logger = Logger(label: "worker")
    logger.logLevel = output.verbose ? .debug : .warning
    return logger
}
