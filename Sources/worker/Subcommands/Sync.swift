import ArgumentParser
import FoundationEssentials
import Glibc
import Logging
import WorkerManifest
import WorkerReport
import WorkerStore
import WorkerSync

/// `worker sync MANIFEST…`: download what is missing or changed, verify, store, report.
struct Sync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Download what is missing or changed, verify every body, store it, and report.",
        discussion: """
            Examples:
              worker sync manifests/avatars.yaml
              worker sync manifests/*.yaml --report report.json --max-failures 1% --deadline 20m
              worker sync manifests/avatars.yaml --refresh --limit-rate 1M --max-rps 20
              worker sync manifests/avatars.yaml --tree /srv/www/avatars
              worker sync manifests/avatars.yaml --tree ./Bundle/Avatars --layout sdwebimage
            """)

    @Argument(help: "Manifest files (YAML), or their http(s):// or s3:// URLs.")
    var manifests: [String]

    @Flag(name: .customLong("dry-run"), help: "Only show the plan (same as `worker plan`).")
    var dryRun = false

    @Option(
        name: .customLong("tree"),
        help: ArgumentHelp(
            "After the sync, publish every entry at its tree path (its `path`, else its URL's path) under DIR: a link "
                + "switched at once to a complete folder of hard links into the cache.", valueName: "DIR"))
    var tree: String?

    @Flag(
        name: .customLong("tree-complete"),
        help: "Switch the --tree only to a version with every entry in it (else the version before stays).")
    var treeComplete = false

    @Option(
        help: ArgumentHelp(
            "How the --tree names its files: \(TreeLayout.names) (default tree: at their tree paths; "
                + "the others as `worker export --layout` does).", valueName: "LAYOUT"))
    var layout: TreeLayout?

    @OptionGroup var options: SyncCommandOptions

    func validate() throws {
        guard !manifests.isEmpty else { throw ValidationError("give at least one manifest") }
        if treeComplete, tree == nil { throw ValidationError("--tree-complete goes with --tree DIR") }
        if layout != nil, tree == nil { throw ValidationError("--layout goes with --tree DIR") }
    }

    func run() async throws {
        let output = options.output
        if dryRun {
            try await runPlan(
                manifests: manifests, cacheDirectory: options.cache.resolved, reportPath: output.reportPath,
                reportAll: output.reportAll, quiet: output.quiet, prune: options.selection.prune, tree: tree,
                layout: layout ?? .tree,
                fetch: try options.network.settings(for: Self.self), trust: try options.trust.trust())
            return
        }
        var settings = try options.syncOptions(manifests: manifests, command: Self.self)
        settings.tree = tree
        settings.treeComplete = treeComplete
        settings.treeLayout = layout ?? .tree
        let printer = ProgressPrinter(mode: output.progress, quiet: output.quiet)
        let stop = StopSignals.enable { message in
            printer.map { $0.note("worker: " + message) } ?? Console.notice("worker: " + message)
        }
        if let printer { settings.onProgress = { printer.update($0) } }
        defer { printer?.stop() }
        let engine = SyncEngine(options: settings, context: .command(logger: makeLogger(output), stop: stop))
        let report: SyncReport = try await engine.sync(manifestPaths: manifests)
        printer?.stop()
        let text = TextReportWriter()
        if !output.quiet { Console.out(text.summary(report)) }
        let failureLines = text.failureLines(report, reportPath: output.reportPath)
        if let failure = report.treeFailure {
            for line in failureLines { Console.error(line) }
            throw failure
        }
        guard report.succeeded else { throw CommandFailure.unfinished(failureLines) }
        for line in failureLines { Console.error(line) }
    }
}

/// The engine's logger (the handler `WorkerCommand.main` set up): warnings unless --verbose.
extension Sync: LogFormatChoosing {
    var logFormat: LogFormat { options.output.logFormat }
}

func makeLogger(_ output: OutputOptions) -> Logger {
    var logger = Logger(label: "worker")
    logger.logLevel = output.verbose ? .debug : .warning
    return logger
}
