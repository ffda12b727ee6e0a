import ArgumentParser
import FoundationEssentials
import Glibc
import WorkerFetch
import WorkerManifest
import WorkerReport
import WorkerStore
import WorkerSync

/// `worker plan MANIFEST…`: what a sync would do, with no network and no change.
struct Plan: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plan",
        abstract: "Show what a sync would do, with no network access (but to a remote manifest) and no change to the cache.",
        discussion: """
            Examples:
              worker plan manifests/avatars.yaml
              worker plan manifests/*.yaml --prune --report plan.json
            """)

    @Argument(help: "Manifest files (YAML).")
    var manifests: [String]

    @OptionGroup(title: "Cache") var cache: CacheOptions

    @OptionGroup(title: "Network (for a remote manifest)") var network: NetworkOptions

    @OptionGroup(title: "Signed and remote manifests") var trust: ManifestTrustOptions

    @Flag(help: "Count cache entries no given manifest names as to be removed.")
    var prune = false

    @Option(name: .customLong("report"), help: "Write the plan as a JSON report (schema 1) to this file.")
    var reportPath: String?

    @Flag(name: .customLong("report-all"), help: "List unchanged entries in the report too.")
    var reportAll = false

    @Flag(name: [.short, .customLong("quiet")], help: "Print nothing on stdout.")
    var quiet = false

    @Option(
        name: .customLong("tree"),
        help: ArgumentHelp(
            "Also say whether `sync --tree DIR` would switch the tree.",
            valueName: "DIR"))
    var tree: String?

    @Option(help: ArgumentHelp("The --tree's layout: \(TreeLayout.names) (default tree).", valueName: "LAYOUT"))
    var layout: TreeLayout?

    func validate() throws {
        guard !manifests.isEmpty else { throw ValidationError("give at least one manifest") }
        if layout != nil, tree == nil { throw ValidationError("--layout goes with --tree DIR") }
    }

    func run() async throws {
        try await runPlan(
            manifests: manifests, cacheDirectory: cache.resolved, reportPath: reportPath, reportAll: reportAll,
            quiet: quiet, prune: prune, tree: tree, layout: layout ?? .tree,
            fetch: try network.settings(for: Self.self),
            trust: try trust.trust())
    }
}

/// Shared by `worker plan` and `worker sync --dry-run`.
func runPlan(
    manifests paths: [String], cacheDirectory: String, reportPath: String?, reportAll: Bool, quiet: Bool,
    prune: Bool, tree: String? = nil, layout: TreeLayout = .tree, fetch: FetchSettings,
    trust: ManifestTrust
) async throws {
    let file = reportPath.map { SyncOutputs.File(JSONReportWriter(all: reportAll), $0) }
    try checkOutputs(file.map { [(format: $0.format, path: $0.path)] } ?? [], manifests: paths)
    var options = SyncOptions(cacheDirectory: cacheDirectory)
    options.prune = prune
    options.tree = tree
    options.treeLayout = layout
    options.shownRows = TextReportWriter().listLimit
    options.outputs = SyncOutputs(file.map { [$0] } ?? [])
    options.fetch = fetch
    options.trust = trust
    options.mayCreateCache = false
    let report: SyncReport = try await SyncEngine(options: options, context: .command()).dryRun(manifestPaths: paths)
    if !quiet { Console.out(TextReportWriter().summary(report)) }
}
