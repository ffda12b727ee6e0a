import ArgumentParser
import Foundation
import ManifestSync

/// `worker plan MANIFEST…`: what a sync would do, with no network and no change.
struct Plan: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show what a sync would do, with no network access and no change to the cache.")

    @Argument(help: "Manifest files (YAML).")
    var manifests: [String]

    @OptionGroup var common: CommonOptions

    @Flag(help: "Count cache entries no given manifest names as to be removed.")
    var prune = false

    func validate() throws {
        guard !manifests.isEmpty else { throw ValidationError("give at least one manifest") }
    }

    func run() async throws {
        try runPlan(manifests: manifests, common: common, prune: prune)
    }
}

/// Shared by `worker plan` and `worker sync --dry-run`.
func runPlan(manifests paths: [String], common: CommonOptions, prune: Bool) throws {
    let startedAt = Date()
    try checkOutputs([(.report, common.reportPath)], manifests: paths)
    let set = try loadManifests(paths)
    var options = SyncOptions(cacheDirectory: common.resolvedCacheDirectory())
    options.prune = prune
    options.reportAll = common.reportAll
        options.listLimit = common.reportPath == nil ? TextReportWriter().listLimit : nil
    let engine = SyncEngine(options: options)
    let report: SyncReport
    do {
        report = engine.report(of: try engine.plan(set), startedAt: startedAt)
    } catch {
        throw cacheExitCode(error)
    }
    if !common.quiet { Console.out(TextReportWriter().summary(report)) }
    try writeReport(report, to: common.reportPath)
}
