import FoundationEssentials
import Glibc
import WorkerSupport

/// `worker path`, `worker rm`, `worker clear`: look-ups and removals, under the lock where they
/// write. Rows go before their files, and an object goes only when no row names it.
public struct CacheMaintenance: Sendable {
    public let cacheDirectory: String
    public var waitLock: Double?
    /// The command's lock notices and stop request.
    public var context: RunContext

    public init(cacheDirectory: String, waitLock: Double? = nil, context: RunContext = RunContext()) {
        self.cacheDirectory = cacheDirectory
        self.waitLock = waitLock
        self.context = context
    }

    private var indexPath: String { CacheLayout.indexPath(cacheDirectory) }

    // MARK: - path

    /// The object path of `url`'s current version, or nil when it is not cached. Reads only (it
    /// answers while syncs write, and in a cache this user may only read); the read counts as a
    /// use for `gc` when that costs no wait (`recordUse`).
    public func path(for url: String) async throws(CacheError) -> String? {
        guard access(indexPath, F_OK) == 0 else { return nil }
        let index = try CacheIndex(path: indexPath, create: false, readOnly: true)
        guard let record = try index.record(url: url) else { return nil }
        let objects = ObjectDirectory(objectsDirectory: CacheLayout.objectsDirectory(cacheDirectory))
        guard objects.contains(record.object) else { return nil }
        Self.recordUse(record, url: url, cacheDirectory: cacheDirectory)
        return CacheLayout.objectPath(cacheDirectory, record.object)
    }

    /// Refreshes a read entry's "last used" (what `gc` evicts by) like relatime: at most hourly,
    /// and only when it costs no wait — a cache this user cannot write, or another connection
    /// writing for more than a moment, leaves it as it is.
    public static func recordUse(
        _ record: IndexRecord, url: String, cacheDirectory: String,
        now: Double = Date().timeIntervalSince1970
    ) {
        let path = CacheLayout.indexPath(cacheDirectory)
        guard record.lastUsed < now - 3600, access(path, W_OK) == 0, access(cacheDirectory, W_OK) == 0,
            let index = try? CacheIndex(path: path, create: false)
        else { return }
        index.database.setBusyTimeout(milliseconds: 100)
        try? index.setLastUsed(now, urls: [url])
    }

    // MARK: - rm

    public struct Removal: Sendable {
        public var removed: [String] = []
        /// URLs that had no entry but a pending failure, now forgotten.
        public var failuresCleared: [String] = []
        public var notCached: [String] = []
        public var objectsDeleted = 0
        public var bytesFreed: Int64 = 0
    }

    /// Removes the entries of `urls` (rows first, then the objects no row names) and their pending
    /// failures, holding the lock for that only.
    public func remove(urls: [String]) async throws(CacheError) -> Removal {
        var result = Removal()
        guard access(indexPath, F_OK) == 0 else {
            result.notCached = urls
            return result
        }
        if let problem = CacheAccess.writeProblem(root: cacheDirectory) { throw .notWritable(problem) }
        let store = try ContentStore(root: cacheDirectory)
        let lock = try await CacheLock(directory: cacheDirectory, wait: waitLock, context: context)
        defer { lock.release() }
        let index = try CacheIndex(path: indexPath, create: true)
        var records: [IndexRecord] = []
        var damaged: [String] = []
        var failed: [String] = []
        for url in urls {
            if let record = try index.record(url: url) {
                records.append(record)
            } else if try index.hasRow(url: url) {
                // A damaged row (its object name is not one): the row goes, no file is touched.
                damaged.append(url)
            } else if try index.hasFailure(url: url) {
                failed.append(url)
            } else {
                result.notCached.append(url)
            }
        }
        // Rows before files; a stop in between leaves the mark, and the next sync sweeps.
        var batch = BatchCommit(store: store)
        if !records.isEmpty { try batch.markUnclean() }
        // Removing a URL clears its pending failure too.
        try index.apply(upserts: [], touches: [], removals: records.map(\.url) + damaged + failed, at: Date().timeIntervalSince1970)
        result.removed = (records.map(\.url) + damaged).map(Redact.url)
        result.failuresCleared = failed.map(Redact.url)
        (result.objectsDeleted, result.bytesFreed) = try Self.deleteUnreferenced(records, index: index, store: store)
        if batch.markedUnclean { store.markClean() }
        return result
    }

    /// Deletes the objects of `removed` rows that no remaining row names.
    public static func deleteUnreferenced(
        _ removed: [IndexRecord], index: CacheIndex,
        store: ContentStore
    ) throws(CacheError) -> (objects: Int, bytes: Int64) {
        var sizes: [String: Int64] = [:]
        for record in removed { sizes[record.object] = record.size }
        var objects = 0
        var bytes: Int64 = 0
        for (object, size) in sizes where try index.references(object: object) == 0 {
            store.remove(object)
            objects += 1
            bytes += size
        }
        return (objects, bytes)
    }

    // MARK: - clear

    /// Removes every entry and object (the rows first), and what `tmp/` holds: once no other run
    /// writes (it waits, up to `--wait-lock`, for running syncs to end).
    public func clear() async throws(CacheError) -> (entries: Int, objects: Int) {
        guard access(indexPath, F_OK) == 0 else { return (0, 0) }
        if let problem = CacheAccess.writeProblem(root: cacheDirectory) { throw .notWritable(problem) }
        let store = try ContentStore(root: cacheDirectory)
        let slot = try await WriterSlot(directory: cacheDirectory, exclusive: true, wait: waitLock, stop: context.stop)
        defer { slot.release() }
        let lock = try await CacheLock(directory: cacheDirectory, wait: waitLock, context: context)
        defer { lock.release() }
        var entries = 0
        do throws(CacheError) {
            let index = try CacheIndex(path: indexPath, create: true)
            entries = try index.statistics().entries
            try index.removeAll()
        } catch .index(_, let cause) where cause.isCorrupt {
            // A damaged index cannot even be read: it goes, and a new empty one takes its place.
            for suffix in ["", "-wal", "-shm"] { unlink(indexPath + suffix) }
            _ = try CacheIndex(path: indexPath, create: true)
        }
        var objects = 0
        for slot in 0..<256 {
            let folder = store.objectsDirectory + "/" + Hex.encode([UInt8(slot)])
            for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where unlink(folder + "/" + name) == 0 {
                objects += 1
            }
        }
        _ = store.removeStaleTemporaryFiles()
        store.removeMarks(store.uncleanMarks())
        store.partials.removeAll(olderThan: nil)
        return (entries, objects)
    }
}
