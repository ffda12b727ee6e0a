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
    @OptionGroup(title: "Signed and remote manifests") var trust: ManifestTrustOptions

    /// The engine's settings, made once as the command starts; an option's value that cannot be
    /// used is `command`'s usage error.
    func syncOptions(manifests: [String], command: any ParsableCommand.Type) throws -> SyncOptions {
        var options = SyncOptions(cacheDirectory: cache.resolved)
        selection.apply(to: &options)
        options.fetch = try network.settings(for: command)
        options.waitLock = scheduling.lock.seconds()
        options.deadline = scheduling.deadline?.value
        options.failureBudget = scheduling.maxFailures
        options.failureBudget.failsOnFailover = scheduling.failOnFailover
        options.shard = try optionChecked(for: command) { try scheduling.resolvedShard() }
        options.shownRows = TextReportWriter().listLimit
        options.outputs = try output.outputs(manifests: manifests)
        options.trust = try trust.trust()
        return options
    }
}
