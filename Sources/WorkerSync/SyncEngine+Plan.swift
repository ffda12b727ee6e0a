import FoundationEssentials
import Glibc
import WorkerManifest
import WorkerPlan
import WorkerReport
import WorkerStore

/// Planning: the diff of manifests against the index, with no network and no change.
extension SyncEngine {
    /// `worker plan` and `sync --dry-run`: reads the manifests, plans them against the cache as
    /// it is, and returns (and writes, if asked) the report of what a sync would do.
    public func dryRun(manifestPaths arguments: [String]) async throws(SyncFailure) -> SyncReport {
        let startedAt = Date()
        let (manifests, opened) = try await openAndLoad(arguments, collectsTree: options.collectsTree)
        guard opened.fetchedURLs.isEmpty else {
            var options = options
            options.keptURLs.formUnion(opened.fetchedURLs)
            return try SyncEngine(options: options, context: context).dryRun(manifests, startedAt: startedAt)
        }
        return try dryRun(manifests, startedAt: startedAt)
    }

    private func dryRun(_ manifests: ManifestSet, startedAt: Date) throws(SyncFailure) -> SyncReport {
        do {
            let plan = try plan(manifests)
            let tree = try options.tree.map { path throws(CacheError) in try plannedTree(at: path, manifests: manifests, plan: plan) }
            let report = report(of: plan, startedAt: startedAt, tree: tree)
            try options.outputs.write(report, success: true)
            return report
        } catch {
            throw .cache(error)
        }
    }

    /// The plan against the cache as it is. Creates nothing; a missing cache plans everything.
    public func plan(_ manifests: ManifestSet) throws(CacheError) -> SyncPlan {
        let indexPath = CacheLayout.indexPath(options.cacheDirectory)
        guard access(indexPath, F_OK) == 0 else {
            return Planner(objectExists: { _ in false }).plan(options.shard.filter(manifests), records: IndexRows())
        }
        return try makePlan(manifests, index: CacheIndex(path: indexPath, create: false, readOnly: true)).plan
    }

    /// The one way both `plan` and `sync` diff manifests against the index. Uses what
    /// `prefetch` read ahead when no other writer has committed since.
    func makePlan(
        _ manifests: ManifestSet, index: CacheIndex,
        prefetched: CachePrefetch? = nil
    ) throws(CacheError) -> (plan: SyncPlan, objects: ObjectDirectory) {
        let shard = options.shard.filter(manifests)
        let records: IndexRows
        let objects: ObjectDirectory
        defer { prefetched?.close() }
        if let prefetched, prefetched.isCurrent, let read = prefetched.takeObjects() {
            records = prefetched.rows
            objects = read
            if !prefetched.listed, !objects.hasSizes, ListingRule.worthListing(entries: shard.entries.count, records: records.count) {
                objects.preload()
            }
        } else {
            records = try index.allRows(validators: options.revalidate)
            objects = ObjectDirectory(objectsDirectory: CacheLayout.objectsDirectory(options.cacheDirectory))
            if ListingRule.worthListing(entries: shard.entries.count, records: records.count) { objects.preload() }
        }
        var planner = Planner(objectExists: objects.contains, storedObject: { try? index.storedObject(for: $0) })
        planner.revalidate = options.revalidate && !options.offline
        planner.refresh = options.refresh && !options.offline
        planner.refreshUnpinned = options.refreshUnpinned && !options.offline
        planner.shard = options.shard
        planner.kept = index.credentialFree ? Set(options.keptURLs.map(index.key)) : options.keptURLs
        // Remote manifests' documents are never another run's orphans.
        planner.kept.formUnion((try? index.manifestDocuments()) ?? [])
        if index.credentialFree { planner.urlKey = index.key }
        // A stat per object named: a file changed on disk (its size) is fetched again.
        planner.objectSize = objects.size
        planner.rowObjectSize = objects.size(of:)
        return (planner.plan(shard, records: records), objects)
    }

    /// The report of a plan: what a sync would do, without doing it (the same ledger as a sync's).
    public func report(of plan: SyncPlan, startedAt: Date, tree: TreeOutcome? = nil) -> SyncReport {
        var ledger = SyncLedger(
            plan: plan, cacheDirectory: options.cacheDirectory, startedAt: startedAt,
            outputs: options.outputs, shownRows: options.shownRows, limits: nil, dryRun: true)
        for item in plan.items.indices {
            ledger.record(.planned(item: item))
        }
        if options.prune {
            for (offset, orphan) in plan.orphans.enumerated() {
                ledger.record(.pruned(orphan, position: offset, done: false))
            }
        }
        if let tree { ledger.record(.tree(tree, failure: nil)) }
        return ledger.report(finishedAt: Date(), budget: nil)
    }
}
