import FoundationEssentials
import Glibc
import WorkerPlan
import WorkerStore

extension SyncRun {
    /// `--prune`: removes the index rows (then the objects no row names) of entries no synced
    /// manifest has named for `--prune-after`, unless they are more than `--prune-max` of the
    /// index (`--force` lifts that).
    mutating func prune() async throws(CacheError) {
        let cutoff = Date().timeIntervalSince1970 - options.pruneAfter
        // The grace period: an orphan goes only once no synced manifest has named it for that long.
        let orphans = plan.orphans.filter { $0.lastUsed <= cutoff }
        ledger.record(.pruneWaiting(plan.orphans.count - orphans.count))
        guard options.prune, !orphans.isEmpty else { return }
        let share = Double(orphans.count) / Double(max(1, plan.indexedEntries))
        if share > options.pruneMax, !options.force {
            ledger.record(
                .pruneRefused(
                    "refusing to prune \(orphans.count) of \(plan.indexedEntries) entries "
                        + "(\(Int((share * 100).rounded())) % > --prune-max \(Int((options.pruneMax * 100).rounded())) %); "
                        + "check the manifests, or pass --force"))
            return
        }
        // Rows go before files: an index row never points at a missing object. A stop in between
        // leaves objects no row names: the mark makes the next run sweep them. Under the lock, no
        // other run has an object installed and not yet named that this could delete.
        let lock = try await CacheLock.forCommit(directory: store.root, context: context)
        defer { lock.release() }
        try batch.markUnclean()
        try index.apply(upserts: [], touches: [], removals: orphans.map(\.url), at: Date().timeIntervalSince1970)
        _ = try CacheMaintenance.deleteUnreferenced(orphans, index: index, store: store)
        for (offset, orphan) in orphans.enumerated() {
            ledger.record(.pruned(orphan, position: offset, done: true))
        }
    }
}
