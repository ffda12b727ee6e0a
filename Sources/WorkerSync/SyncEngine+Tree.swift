import FoundationEssentials
import Glibc
import WorkerManifest
import WorkerPlan
import WorkerReport
import WorkerStore
import WorkerSupport

extension SyncEngine {
    /// Publishes the manifests' tree after the run's last commit: each entry at its tree path,
    /// holding the object the index names for its URL (an entry that failed keeps the version
    /// the cache still serves; one never fetched is absent). The tree's lock first, then the
    /// cache's (`TreePublisher.publish`), each waited for up to `--wait-lock`.
    ///
    /// Whether the tree changed is decided from the run's own plan and outcomes (a warm run with
    /// an unchanged tree reads nothing more); a tree to build is read from the index.
    func publishTree(at path: String, manifests: ManifestSet, index: CacheIndex, run: SyncRun) async throws(CacheError) -> TreeOutcome {
        let (directory, layout) = (options.cacheDirectory, options.treeLayout)
        let exact = { () throws(CacheError) -> [TreeFile] in
            try Self.treeFiles(manifests, layout: layout, index: index, cacheDirectory: directory)
        }
        let believed = Self.treeFiles(manifests, layout: layout, run: run, cacheDirectory: directory)
        // A run stopped from outside (Ctrl-C, SIGTERM) never publishes an intermediate version
        // (entries not done, or still at the version before): only the complete new one.
        let stopped = context.stop.reason != nil
        if stopped, run.ledger.totals.failed > 0 {
            let publisher = TreePublisher(path: path)
            var held = TreeOutcome(
                path: publisher.path, version: (try? publisher.currentVersion()) ?? "", missing: run.ledger.totals.failed)
            held.withheld = true
            held.stopped = true
            return held
        }
        var outcome = try await TreePublisher(path: path).publish(
            cacheDirectory: directory, wait: options.waitLock, context: context,
            onlyComplete: options.treeComplete || stopped,
            files: { () throws(CacheError) -> [TreeFile] in
                if let believed { return believed }
                return try exact()
            },
            exact: believed == nil ? nil : exact)
        outcome.stopped = stopped && outcome.withheld
        return outcome
    }

    /// The tree as the run left it: each entry's object as the run recorded it
    /// (`SyncLedger.object(of:)`), else the row it planned with (failed and still served). Nil
    /// for a run of one shard (its plan holds only that shard's entries).
    static func treeFiles(_ manifests: ManifestSet, layout: TreeLayout, run: SyncRun, cacheDirectory: String) -> [TreeFile]? {
        let items = run.plan.items
        guard items.count == manifests.entries.count else { return nil }
        return layout.files(of: manifests, objectsDirectory: CacheLayout.objectsDirectory(cacheDirectory)) { entry in
            run.ledger.object(of: entry)?.hex ?? items[entry].previous?.object
        }
    }

    /// What `--tree` would do after the planned sync (`--dry-run`): the tree from the cache as it
    /// is, switched when that differs from the published one or an entry of it is to be fetched.
    func plannedTree(at path: String, manifests: ManifestSet, plan: SyncPlan) throws(CacheError) -> TreeOutcome {
        let publisher = TreePublisher(path: path)
        let current = try publisher.currentVersion()
        let indexPath = CacheLayout.indexPath(options.cacheDirectory)
        let layout = options.treeLayout
        let files: [TreeFile]
        if access(indexPath, F_OK) == 0 {
            files = try Self.treeFiles(
                manifests, layout: layout, index: CacheIndex(path: indexPath, create: false, readOnly: true),
                cacheDirectory: options.cacheDirectory)
        } else {
            // No index yet: every file of the layout is missing.
            let nothing: (Int) -> String? = { _ in nil }
            files = layout.files(of: manifests, objectsDirectory: CacheLayout.objectsDirectory(options.cacheDirectory), object: nothing)
        }
        let fetched = Set(plan.items.filter { $0.action != .keep && $0.action != .revalidate }.map(\.entry.url))
        let present = TreePublisher.ordered(files)
        var outcome = TreeOutcome(
            path: publisher.path, version: TreePublisher.version(of: present), files: present.count,
            missing: files.count - present.count)
        let changing = layout.entries(of: manifests).contains { fetched.contains(manifests.entries[$0].url) }
        outcome.switched = changing || current != outcome.version
        return outcome
    }

    /// Each file of the tree with the object its entry's row names, or none.
    static func treeFiles(
        _ manifests: ManifestSet, layout: TreeLayout, index: CacheIndex,
        cacheDirectory: String
    ) throws(CacheError) -> [TreeFile] {
        // One lookup per distinct entry (an entry may be at several paths).
        var wanted: [Int: Int] = [:]
        var urls: [String] = []
        for entry in layout.entries(of: manifests) where wanted[entry] == nil {
            wanted[entry] = urls.count
            urls.append(manifests.entries.url(at: entry))
        }
        let objects = try index.objects(urls: urls)
        return layout.files(of: manifests, objectsDirectory: CacheLayout.objectsDirectory(cacheDirectory)) { entry in
            wanted[entry].flatMap { objects[$0] }
        }
    }
}
