import ArgumentParser
import FoundationEssentials
import Glibc
import ManifestSync

/// Every option of `worker sync`, as the engine's settings: one place builds them.
struct SyncCommandOptions: ParsableArguments {
    @OptionGroup(title: "Cache") var cache: CacheOptions
    @OptionGroup(title: "Selection") var selection: SelectionOptions
    @OptionGroup(title: "Network") var network: NetworkOptions
    @OptionGroup(title: "Reports and output") var output: OutputOptions
    @OptionGroup(title: "Scheduling") var scheduling: SchedulingOptions

    func syncOptions(manifests: [String]) throws -> SyncOptions {
        var options = SyncOptions(cacheDirectory: cache.resolved)
        try selection.apply(to: &options)
        options.fetch = try network.settings()
        options.waitLock = try scheduling.lock.seconds()
        options.deadline = try scheduling.deadlineSeconds()
        options.failureBudget = try scheduling.failureBudget()
        options.shard = try scheduling.resolvedShard()
        options.reportAll = output.reportAll
        options.listLimit = output.reportPath == nil ? TextReportWriter().listLimit : nil
        options.outputs = try output.outputs(manifests: manifests)
        return options
    }
}
