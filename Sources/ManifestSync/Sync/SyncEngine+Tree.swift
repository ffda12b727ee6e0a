import FoundationEssentials
import Glibc

extension SyncEngine {
    /// Publishes the manifests' tree after the run's last commit: each entry at its tree path,
    /// holding the object the index names for its URL (an entry that failed keeps the version
    /// the cache still serves; one never fetched is absent). Under the cache's lock, so that no
    /// gc or other run removes an object between its lookup and its link.
    func publishTree(at path: String, manifests: ManifestSet, index: CacheIndex) async throws(CacheError) -> TreeOutcome {
        let lock = try await CacheLock(directory: options.cacheDirectory, wait: options.waitLock, context: context)
        defer { lock.release() }
        let files = try Self.treeFiles(manifests, index: index, cacheDirectory: options.cacheDirectory)
        return try TreePublisher(path: path).publish(files)
    }

    /// What `--tree` would do after the planned sync (`--dry-run`): the tree from the cache as it
    /// is, switched when that differs from the published one or an entry of it is to be fetched.
    func plannedTree(at path: String, manifests: ManifestSet, plan: SyncPlan) throws(CacheError) -> TreeOutcome {
        let publisher = TreePublisher(path: path)
        let current = try publisher.currentVersion()
        let indexPath = CacheLayout.indexPath(options.cacheDirectory)
        let files: [TreeFile]
        if access(indexPath, F_OK) == 0 {
            files = try Self.treeFiles(manifests, index: CacheIndex(path: indexPath, create: false, readOnly: true),
                                       cacheDirectory: options.cacheDirectory)
        } else {
            files = manifests.tree.map { TreeFile(path: $0.path, source: nil) }
        }
        let fetched = Set(plan.items.filter { $0.action != .keep && $0.action != .revalidate }.map(\.entry.url))
        let present = files.filter { $0.source != nil }.sorted { $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) }
        var outcome = TreeOutcome(path: publisher.path, version: TreePublisher.version(of: present), files: present.count,
                                  missing: files.count - present.count)
        let changing = manifests.tree.contains { fetched.contains(manifests.entries[$0.entry].url) }
        outcome.switched = changing || current != outcome.version
        return outcome
    }

    /// Each tree entry with the object its URL's row names, or none.
    static func treeFiles(_ manifests: ManifestSet, index: CacheIndex, cacheDirectory: String) throws(CacheError) -> [TreeFile] {
        var objects: [Int: String?] = [:]
        var files: [TreeFile] = []
        files.reserveCapacity(manifests.tree.count)
        for place in manifests.tree {
            let object: String?
            if let known = objects[place.entry] {
                object = known
            } else {
                object = try index.record(url: manifests.entries[place.entry].url)
                    .map { CacheLayout.objectPath(cacheDirectory, $0.object) }
                objects[place.entry] = object
            }
            files.append(TreeFile(path: place.path, source: object))
        }
        return files
    }
}
