import FoundationEssentials
import Glibc

/// One batch of finished work, made durable in the order that survives a crash at any point:
/// mark the cache unclean (once a run, durably), rename each new body to its object name as it
/// arrives, flush at the commit (their bytes and the renames at once), then one index transaction
/// for the batch's rows. One flush per batch, not an fsync per file (git's batch fsync mode); the
/// renames overlap the downloads still running instead of waiting for the commit. A crash before
/// the flush ends may leave objects whose bytes never reached the disk, but no row names them yet
/// and the mark makes the next run sweep them. A body whose object name is already taken (the
/// same bytes, or a damaged leftover) waits for the flush before it replaces that file, so a file
/// a row may name is never swapped for bytes not yet on disk. The one place that installs
/// objects: `sync` and `verify --repair` both commit through it.
struct BatchCommit {
    let store: ContentStore
    private(set) var upserts: [IndexRecord] = []
    private(set) var failures: [FailureRecord] = []
    /// Objects installed since the last flush.
    private var installed = 0
    /// Bodies whose object name was taken: installed over it after the flush.
    private var replacing: [(temporary: String, sha256: String)] = []
    /// Why an install failed, thrown by the next commit; nothing more is installed meanwhile.
    private var installFailure: CacheError?
    /// Body bytes waiting to be made durable (a batch also closes by size).
    private(set) var bytes: Int64 = 0
    /// Whether this batch's run has marked the cache unclean (objects may be installed before
    /// their rows): the run clears the mark when it ends normally.
    private(set) var markedUnclean = false

    init(store: ContentStore) {
        self.store = store
    }

    var isEmpty: Bool { upserts.isEmpty && failures.isEmpty }

    /// A verified body to install under its SHA-256 (now, unless its name is taken), and the
    /// row that names it (at the commit).
    mutating func add(_ record: IndexRecord, installing temporary: String?) {
        upserts.append(record)
        guard let temporary else { return }
        guard installFailure == nil else {
            unlink(temporary)
            return
        }
        do throws(CacheError) {
            if !markedUnclean {
                // Durable before any object is installed: a crash from here on leaves the mark,
                // and the next run sweeps unindexed objects.
                try store.markUnclean()
                markedUnclean = true
            }
            if try store.installNew(temporary: temporary, sha256: record.object) {
                installed += 1
            } else {
                replacing.append((temporary, record.object))
            }
        } catch {
            installFailure = error
        }
    }

    mutating func addBytes(_ count: Int64) {
        bytes += count
    }

    mutating func add(failure: FailureRecord) {
        failures.append(failure)
    }

    /// Commits the batch with `touches` (URLs used) and `removals` (rows to delete), then empties it.
    mutating func commit(index: CacheIndex, touches: [String] = [], removals: [String] = [],
                         at time: Double) throws(CacheError) {
        if let installFailure { throw installFailure }
        guard !isEmpty || !touches.isEmpty || !removals.isEmpty else { return }
        if installed > 0 || !replacing.isEmpty {
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
        replacing.removeAll()
        installed = 0
        bytes = 0
    }

    /// Marks the cache unclean before rows are removed ahead of their files (prune, rm).
    mutating func markUnclean() throws(CacheError) {
        guard !markedUnclean else { return }
        try store.markUnclean()
        markedUnclean = true
    }
}
