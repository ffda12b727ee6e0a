import Foundation

/// One batch of finished work, made durable in the order that survives a crash at any point:
/// mark the cache unclean (once a run, durably), rename the new bodies to their object names,
/// flush (their bytes and the renames at once), then one index transaction for the batch's rows.
/// One flush per batch, not an fsync per file (git's batch fsync mode). A crash before the flush
/// ends may leave objects whose bytes never reached the disk, but no row names them yet and the
/// mark makes the next run sweep them. A body whose object name is already taken (the same bytes,
/// or a damaged leftover) is flushed before it replaces that file, so a file a row may name is
/// never swapped for bytes not yet on disk. The one place that installs objects: `sync` and
/// `verify --repair` both commit through it.
struct BatchCommit {
    private(set) var upserts: [IndexRecord] = []
    private(set) var failures: [FailureRecord] = []
    private var installs: [(temporary: String, sha256: String)] = []
    /// Body bytes waiting to be installed (a batch also closes by size).
    private(set) var bytes: Int64 = 0
    /// Whether this batch's run has marked the cache unclean (objects may be installed before
    /// their rows): the run clears the mark when it ends normally.
    private(set) var markedUnclean = false

    var isEmpty: Bool { upserts.isEmpty && failures.isEmpty }

    /// A verified body to install under its SHA-256, and the row that names it.
    mutating func add(_ record: IndexRecord, installing temporary: String?) {
        upserts.append(record)
        if let temporary {
            installs.append((temporary, record.object))
        }
    }

    mutating func addBytes(_ count: Int64) {
        bytes += count
    }

    mutating func add(failure: FailureRecord) {
        failures.append(failure)
    }

    /// Commits the batch with `touches` (URLs used) and `removals` (rows to delete), then empties it.
    mutating func commit(store: ContentStore, index: CacheIndex, touches: [String] = [], removals: [String] = [],
                         at time: Double) throws(CacheError) {
        guard !isEmpty || !touches.isEmpty || !removals.isEmpty else { return }
        if !installs.isEmpty {
            if !markedUnclean {
                // Durable before any object is installed: a crash from here on leaves the mark,
                // and the next run sweeps unindexed objects.
                try store.markUnclean()
                markedUnclean = true
            }
            var replacing: [(temporary: String, sha256: String)] = []
            for install in installs {
                if try !store.installNew(temporary: install.temporary, sha256: install.sha256) {
                    replacing.append(install)
                }
            }
            try store.flush()
            if !replacing.isEmpty {
                for install in replacing {
                    try store.install(temporary: install.temporary, sha256: install.sha256)
                }
                try store.flush()
            }
        }
        try index.apply(upserts: upserts, touches: touches, removals: removals, failures: failures, at: time)
        upserts.removeAll(keepingCapacity: true)
        failures.removeAll()
        installs.removeAll(keepingCapacity: true)
        bytes = 0
    }

    /// Marks the cache unclean before rows are removed ahead of their files (prune, rm).
    mutating func markUnclean(_ store: ContentStore) throws(CacheError) {
        guard !markedUnclean else { return }
        try store.markUnclean()
        markedUnclean = true
    }
}
