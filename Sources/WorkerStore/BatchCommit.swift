import FoundationEssentials
import Glibc

/// One batch of finished work, made durable in the order that survives a crash at any point,
/// holding the cache's `CacheLock` from the first rename to the index commit: mark the cache
/// unclean (once a process, durably), rename each new body to its object name, flush (their
/// bytes and the renames at once), then one index transaction for the batch's rows. One flush per
/// batch, not an fsync per file (git's batch fsync mode). A crash before the flush ends may leave
/// objects whose bytes never reached the disk, but no row names them yet and the mark makes the
/// next lone writer sweep them. A body whose object name is already taken (the same bytes, or a
/// damaged leftover) waits for the flush before it replaces that file, so a file a row may name is
/// never swapped for bytes not yet on disk.
///
/// Several writers share a cache, so an object is installed only under the lock and indexed
/// before the lock is let go: whoever holds the lock sees no object that is installed but not yet
/// named, and may delete what no row names. A row for content stored earlier (`reuse`) is
/// written only if its object is still there (a prune or gc of another run may have taken it).
/// The one place that installs objects: `sync` and `verify --repair` both commit through it.
///
/// A disk that fills up: when the index cannot take the batch's rows (SQLite's "database or disk
/// is full"), the batch's failure records go first (bookkeeping only), then rows whose objects
/// this batch installed, an eighth of them at a time, with those objects — until what is left fits.
/// What was dropped is `notStored`: those entries fail as "no space left on the device", and
/// the next run asks only for them.
public struct BatchCommit {
    let store: ContentStore
    /// Told of the rows whose bodies each commit installed, once they are in the index.
    public var observer: (any InstallObserver)?
    public private(set) var upserts: [IndexRecord] = []
    /// The plan item of each row in `upserts` (nil for rows of no plan: `verify --repair`), and
    /// whether the row reuses content rather than installing a body.
    private var items: [Origin] = []

    public struct Origin {
        public let item: Int?
        public let reused: Bool
    }
    private(set) var failures: [FailureRecord] = []
    /// Verified bodies waiting for the commit: their temporary files and object names.
    private var installs: [(temporary: String, sha256: String)] = []
    /// Body bytes waiting to be made durable (a batch also closes by size).
    public private(set) var bytes: Int64 = 0
    /// Whether this process has marked the cache unclean (objects may be installed before their
    /// rows): the run clears its mark when it ends normally.
    public private(set) var markedUnclean = false
    /// Rows the last commit dropped because their stored object had gone meanwhile (by URL).
    public private(set) var vanished: [String] = []
    /// Rows the last commit dropped for want of space, with their objects (deleted).
    public private(set) var notStored: [(origin: Origin, url: String, object: String)] = []

    public init(store: ContentStore) {
        self.store = store
    }

    public var isEmpty: Bool { upserts.isEmpty && failures.isEmpty }

    /// A verified body to install under its SHA-256 at the commit, and the row that names it.
    public mutating func add(_ record: consuming IndexRecord, item: Int? = nil, installing temporary: String?) {
        if let temporary { installs.append((temporary, record.object)) }
        items.append(Origin(item: item, reused: temporary == nil))
        upserts.append(record)
    }

    public mutating func addBytes(_ count: Int64) {
        bytes += count
    }

    public mutating func add(failure: FailureRecord) {
        failures.append(failure)
    }

    /// Commits the batch with `touches` (URLs used) and `removals` (rows to delete), then empties
    /// it. Call holding the cache's lock.
    public mutating func commit(
        index: CacheIndex, touches: [String] = [], removals: [String] = [],
        at time: Double
    ) throws(CacheError) {
        guard !isEmpty || !touches.isEmpty || !removals.isEmpty else { return }
        (notStored, vanished) = ([], [])
        defer {
            upserts.removeAll(keepingCapacity: true)
            items.removeAll(keepingCapacity: true)
            failures.removeAll()
            installs.removeAll(keepingCapacity: true)
            bytes = 0
        }
        // Every install either lands or ends the commit (thrown): past this block, each row that
        // brought a body names an object installed here.
        if !installs.isEmpty {
            // Durable before any object is installed: a crash from here on leaves the mark.
            try markUnclean()
            var replacing: [(temporary: String, sha256: String)] = []
            for (number, install) in installs.enumerated() {
                do throws(CacheError) {
                    if try !store.installNew(temporary: install.temporary, sha256: install.sha256) {
                        replacing.append(install)
                    }
                } catch {
                    for rest in installs.dropFirst(number + 1) { unlink(rest.temporary) }
                    for waiting in replacing { unlink(waiting.temporary) }
                    throw error
                }
            }
            try store.flush(installed: installs.map(\.sha256))
            if !replacing.isEmpty {
                for install in replacing {
                    try store.install(temporary: install.temporary, sha256: install.sha256)
                }
                try store.flush(installed: replacing.map(\.sha256))
            }
        }
        // The objects this batch installed are made a set only when a row reuses content (or the
        // disk is full): a run of downloads never hashes its object names.
        var records = upserts
        var origins = items
        if origins.contains(where: \.reused) {
            let installed = Set(installs.map(\.sha256))
            // A row for content stored earlier is written only if its object is still there.
            let gone = Set(
                origins.indices.filter { row in
                    origins[row].reused && !installed.contains(records[row].object) && !store.contains(records[row].object)
                })
            if !gone.isEmpty {
                vanished += gone.sorted().map { records[$0].url }
                Self.keepRows(&records, &origins) { !gone.contains($0) }
            }
        }
        let stored = try apply(records, origins, index: index, touches: touches, removals: removals, at: time)
        if let observer {
            let installed = zip(stored.records, stored.origins).filter { !$0.1.reused }.map(\.0)
            if !installed.isEmpty { observer.installed(installed) }
        }
    }

    /// The index transaction, made smaller while the disk is too full for it (see the type's
    /// documentation). `origins` is parallel to `records`. Returns the rows committed.
    private mutating func apply(
        _ records: [IndexRecord], _ origins: [Origin], index: CacheIndex, touches: [String],
        removals: [String],
        at time: Double
    ) throws(CacheError) -> (records: [IndexRecord], origins: [Origin]) {
        var records = records
        var origins = origins
        var failures = failures
        var touches = touches
        while true {
            do throws(CacheError) {
                try index.apply(upserts: records, touches: touches, removals: removals, failures: failures, at: time)
                return (records, origins)
            } catch .index(let path, let cause) where cause.isFull {
                // Bookkeeping first: failures to remember, "last used" times.
                if !failures.isEmpty || !touches.isEmpty {
                    (failures, touches) = ([], [])
                    continue
                }
                // Rows whose objects this batch installed: an eighth of those objects go at a
                // time, with every row naming them; then the rows of content stored before.
                let installed = Set(installs.map(\.sha256))
                let newObjects = Array(Set(records.map(\.object)).intersection(installed)).sorted()
                let dropped = newObjects.isEmpty ? Set(records.map(\.object)) : Set(newObjects.suffix(max(1, newObjects.count / 8)))
                guard !dropped.isEmpty else {
                    if removals.isEmpty { return ([], []) }
                    throw CacheError.index(path: path, cause: cause)
                }
                for (record, origin) in zip(records, origins) where dropped.contains(record.object) {
                    notStored.append((origin, record.url, record.object))
                }
                Self.keepRows(&records, &origins) { [records] in !dropped.contains(records[$0].object) }
                for object in dropped where installed.contains(object) { store.remove(object) }
            }
        }
    }

    /// Keeps the rows (records and their parallel origins) whose position `keep` accepts.
    private static func keepRows(_ records: inout [IndexRecord], _ origins: inout [Origin], _ keep: (Int) -> Bool) {
        let kept = records.indices.filter(keep)
        records = kept.map { records[$0] }
        origins = kept.map { origins[$0] }
    }

    /// Marks the cache unclean before objects are installed, or rows are removed ahead of their
    /// files (prune, rm); once a process.
    public mutating func markUnclean() throws(CacheError) {
        guard !markedUnclean else { return }
        try store.markUnclean()
        markedUnclean = true
    }

    /// Deletes the bodies still waiting (a run that stops without committing them).
    mutating func discard() {
        for install in installs { unlink(install.temporary) }
        installs.removeAll()
    }
}

/// Told of the objects a commit installed (`BatchCommit.observer`): the shared tier's uploads
/// take what they were promised once it is in the cache.
public protocol InstallObserver: AnyObject, Sendable {
    /// The rows whose bodies the last commit installed, once the index holds them (rows the disk
    /// had no room for are not among them).
    func installed(_ rows: [IndexRecord])
}
