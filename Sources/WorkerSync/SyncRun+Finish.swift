import FoundationEssentials
import Glibc
import Logging
import WorkerFetch
import WorkerManifest
import WorkerPlan
import WorkerReport
import WorkerStore
import WorkerSupport

/// The run's last steps under the cache's lock, after its last commit: a new cache's deferred
/// index, then the previous versions no row names. Part of `SyncRun`.
extension SyncRun {
    /// A new cache's index of rows by object, built once its first run's rows are in
    /// (`CacheIndex.init`'s `deferObjectIndex`), holding the cache's lock for that only. Not
    /// built (no room, a damaged file): the run's rows stand, lookups by object scan, and the
    /// next run that opens the index builds it.
    mutating func buildDeferredObjectIndex() async throws(CacheError) {
        guard index.objectIndexDeferred else { return }
        let lock = try await CacheLock.forCommit(directory: store.root, context: context)
        defer { lock.release() }
        do throws(CacheError) {
            try index.buildObjectIndex()
        } catch {
            logger.warning("the index of rows by object was not built (\(error)); the next run builds it")
        }
    }

    /// Deletes the previous versions no row names any more, then clears this process's mark (a
    /// crash would have left it). The last step of a run, under the lock.
    mutating func finish() async throws(CacheError) {
        guard !replaced.isEmpty || batch.markedUnclean else { return }
        let lock = try await CacheLock.forCommit(directory: store.root, context: context)
        defer { lock.release() }
        for object in replaced where try index.references(object: object) == 0 {
            store.remove(object)
        }
        replaced.removeAll()
        if batch.markedUnclean { store.markClean() }
    }
}
