import ArgumentParser
import FoundationEssentials
import Glibc
import WorkerManifest
import WorkerReport
import WorkerStore
import WorkerSync

/// `worker plan MANIFEST…`: what a sync would do, with no network and no change.
struct Plan: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plan",
        abstract: "Show what a sync would do, with no network access and no change to the cache.",
        discussion: """
            Examples:
              worker plan manifests/avatars.yaml
              worker plan manifests/*.yaml --prune --report plan.json
            """)

    @Argument(help: "Manifest files (YAML).")
    var manifests: [String]

    @OptionGroup(title: "Cache") var cache: CacheOptions

    @Flag(help: "Count cache entries no given manifest names as to be removed.")
    var prune = false

    @Option(name: .customLong("report"), help: "Write the plan as a JSON report (schema 1) to this file.")
    var reportPath: String?

    @Flag(name: .customLong("report-all"), help: "List unchanged entries in the report too.")
    var reportAll = false

    @Flag(name: [.short, .customLong("quiet")], help: "Print nothing on stdout.")
    var quiet = false

    @Option(name: .customLong("tree"), help: ArgumentHelp("Also say whether `sync --tree DIR` would switch the tree.",
                                                          valueName: "DIR"))
    var tree: String?

    func validate() throws {
        guard !manifests.isEmpty else { throw ValidationError("give at least one manifest") }
    }

    func run() async throws {
        try runPlan(manifests: manifests, cacheDirectory: cache.resolved, reportPath: reportPath, reportAll: reportAll,
                    quiet: quiet, prune: prune, tree: tree)
    }
}

/// Shared by `worker plan` and `worker sync --dry-run`.
func runPlan(manifests paths: [String], cacheDirectory: String, reportPath: String?, reportAll: Bool, quiet: Bool,
             prune: Bool, tree: String? = nil) throws {
    try checkOutputs([(.report, reportPath)], manifests: paths)
    var options = SyncOptions(cacheDirectory: cacheDirectory)
    options.prune = prune
    options.tree = tree
    options.shownRows = TextReportWriter().listLimit
    options.outputs.report = reportPath
    options.outputs.reportAll = reportAll
    let report: SyncReport
    do {
        report = try SyncEngine(options: options, context: .command()).dryRun(manifestPaths: paths)
    } catch .manifest(let diagnostics) {
        throw CommandFailure.input(diagnostics.description)
    } catch .cache(let error) {
        throw CommandFailure.cache(error)
    }
    if !quiet { Console.out(TextReportWriter().summary(report)) }
}
