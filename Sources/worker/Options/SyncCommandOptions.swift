import ArgumentParser
import FoundationEssentials
import Glibc
import WorkerReport
import WorkerSync

/// Every option of `worker sync`, as the engine's settings: one place builds them.
struct SyncCommandOptions: ParsableArguments {
    @OptionGroup(title: "Cache") var cache: CacheOptions
    @OptionGroup(title: "Selection") var selection: SelectionOptions
    @OptionGroup(title: "Network") var network: NetworkOptions
    @OptionGroup(title: "Reports and output") var output: OutputOptions
    @OptionGroup(title: "Scheduling") var scheduling: SchedulingOptions

    func syncOptions(manifests: [String]) throws -> SyncOptions {
        var options = SyncOptions(cacheDirectory: cache.resolved)
        selection.apply(to: &options)
        options.fetch = try network.settings()
        options.waitLock = scheduling.lock.seconds()
        options.deadline = scheduling.deadline?.value
        options.failureBudget = scheduling.maxFailures
        options.shard = try scheduling.resolvedShard()
        options.reportAll = output.reportAll
        options.listLimit = output.reportPath == nil ? TextReportWriter().listLimit : nil
        options.outputs = try output.outputs(manifests: manifests)
        return options
    }
}
