import FoundationEssentials
import Glibc
import WorkerStore
import WorkerSupport

/// `worker gc`: SDImageCache's two rules for a shared, manifest-driven cache. Entries not used
/// for `maxAge` go (used = named by a synced manifest, or read through `worker path`); then, while
/// the distinct objects take more than `maxSize`, the least recently used entries go until they
/// take at most `targetShare` of it (SDImageCache trims to half; 80 % keeps more of a warm cache).
public struct GarbageCollector: Sendable {
    public var cacheDirectory: String
    public var maxAge: Double? = 7 * 86400
    public var maxSize: Int64?
    var targetShare = 0.8
    public var dryRun = false
    public var waitLock: Double?
    /// The command's lock notices and stop request.
    public var context = RunContext()

    public init(cacheDirectory: String) {
        self.cacheDirectory = cacheDirectory
    }

    public struct Result: Sendable, Codable {
        public var dryRun: Bool
        public var removedByAge: [String] = []
        public var removedBySize: [String] = []
        public var objectsDeleted = 0
        public var bytesFreed: Int64 = 0
        public var bytesBefore: Int64 = 0
        public var bytesAfter: Int64 = 0
        /// Object files no entry named (an interrupted sync's), removed.
        public var unindexedObjectsDeleted = 0

        enum CodingKeys: String, CodingKey {
            case dryRun = "dry_run"
            case removedByAge = "removed_by_age"
            case removedBySize = "removed_by_size"
            case objectsDeleted = "objects_deleted"
            case bytesFreed = "bytes_freed"
            case bytesBefore = "bytes_before"
            case bytesAfter = "bytes_after"
            case unindexedObjectsDeleted = "unindexed_objects_deleted"
        }
    }

    public func collect(now: Double = Date().timeIntervalSince1970) async throws(CacheError) -> Result {
        var result = Result(dryRun: dryRun)
        guard access(CacheLayout.indexPath(cacheDirectory), F_OK) == 0 else { return result }
        if dryRun {
            return try plan(now: now, index: CacheIndex(path: CacheLayout.indexPath(cacheDirectory), create: false, readOnly: true)).result
        }
        if let problem = CacheAccess.writeProblem(root: cacheDirectory) { throw .notWritable(problem) }
        let store = try ContentStore(root: cacheDirectory)
        let lock = try await CacheLock(directory: cacheDirectory, wait: waitLock, context: context)
        defer { lock.release() }
        let index = try CacheIndex(path: CacheLayout.indexPath(cacheDirectory), create: true)
        let evicted: [IndexRecord]
        (result, evicted) = try plan(now: now, index: index)
        if !evicted.isEmpty {
            // Rows before files; a stop in between leaves the mark, and the next lone writer sweeps.
            var batch = BatchCommit(store: store)
            try batch.markUnclean()
            try index.apply(upserts: [], touches: [], removals: evicted.map(\.url), at: now)
            _ = try CacheMaintenance.deleteUnreferenced(evicted, index: index, store: store)
        }
        // Objects an interrupted sync installed but never indexed: not counted by anything, so
        // they would escape --max-size for good. Under the lock every other run's objects are
        // named already.
        result.unindexedObjectsDeleted = try store.sweepUnreferenced(index)
        // Parts of cut-off bodies no run has resumed for as long as entries may go unused.
        store.partials.removeAll(olderThan: maxAge ?? 7 * 86400, now: now)
        store.markClean()
        // With no writer running, the marks of runs that died are swept too.
        if let slot = try? await WriterSlot(directory: cacheDirectory, exclusive: true, wait: 0, stop: context.stop) {
            store.removeMarks(store.uncleanMarks())
            slot.release()
        }
        return result
    }

    /// What the two rules evict from `index`, and the result they would give.
    private func plan(now: Double, index: CacheIndex) throws(CacheError) -> (result: Result, evicted: [IndexRecord]) {
        var result = Result(dryRun: dryRun)
        let records = try index.allRecords().sorted { ($0.lastUsed, $0.url) < ($1.lastUsed, $1.url) }

        var references: [String: Int] = [:]
        var sizes: [String: Int64] = [:]
        for record in records {
            references[record.object, default: 0] += 1
            // A size the index cannot mean (negative: tampered) counts as nothing; sums hold at
            // Int64.max rather than overflow (`verify` reports such rows).
            sizes[record.object] = max(record.size, 0)
        }
        var bytes = sizes.values.reduce(0, Checked.saturatingSum)
        result.bytesBefore = bytes
        var evicted: [IndexRecord] = []
        func evict(_ record: IndexRecord) {
            evicted.append(record)
            references[record.object]! -= 1
            if references[record.object] == 0 { bytes = Checked.saturatingSum(bytes, -(sizes[record.object] ?? 0)) }
        }
        var kept: [IndexRecord] = []
        for record in records {
            if let maxAge, record.lastUsed < now - maxAge {
                evict(record)
                result.removedByAge.append(Redact.url(record.url))
            } else {
                kept.append(record)
            }
        }
        if let maxSize, bytes > maxSize {
            let target = Int64(Double(maxSize) * targetShare)
            for record in kept where bytes > target {
                evict(record)
                result.removedBySize.append(Redact.url(record.url))
            }
        }
        result.bytesAfter = bytes
        result.bytesFreed = Checked.saturatingSum(result.bytesBefore, -bytes)
        result.objectsDeleted = references.values.filter { $0 == 0 }.count
        return (result, evicted)
    }
}
