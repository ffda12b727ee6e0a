import FoundationEssentials
import Glibc
import Synchronization
import WorkerStore

/// Index rows and an object listing read before the run holds the lock, with the index's data
/// version at the time: if another writer commits before the run takes the lock, the version
/// moves and the run reads again under the lock.
public final class CachePrefetch: Sendable {
    /// What the read opened, made on the prefetching thread and taken by the run: the index's
    /// connection (closed once the run has used it: the last connection to close checkpoints the
    /// WAL, which is the run's connection's job, under the lock) and the objects read so far.
    private struct Opened {
        var index: CacheIndex?
        var objects: ObjectDirectory?
    }

    private let opened: Mutex<Opened>
    private let version: Int64
    public let rows: IndexRows
    /// Whether the objects were listed (decided from the manifests' size before they were
    /// parsed, and the number of rows).
    public let listed: Bool

    /// Manifest bytes per entry, taken low: an estimate of the entry count from file sizes.
    private static let bytesPerEntry = 100

    /// nil without a usable index (a new cache, a planted link, a damaged file): the run then
    /// reads under the lock as usual, and reports what is wrong.
    public init?(cacheDirectory: String, validators: Bool, shards: Int, manifestBytes: Int) {
        let path = CacheLayout.indexPath(cacheDirectory)
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG,
            let index = try? CacheIndex(path: path, create: false, readOnly: true), !index.isStandIn,
            let version = try? index.dataVersion(),
            let rows = try? index.allRows(validators: validators)
        else { return nil }
        self.version = version
        self.rows = rows
        let objects = ObjectDirectory(objectsDirectory: CacheLayout.objectsDirectory(cacheDirectory))
        let entries = manifestBytes / Self.bytesPerEntry / max(1, shards)
        // The plan compares each named object's size with its row: read here, beside the parse,
        // when the manifests look like naming most of the rows (a stat tells presence too).
        let sized = !rows.isEmpty && entries >= rows.count / 2
        if sized { objects.preloadSizes(of: rows) }
        // A small cache is listed by the run anyway (to sweep objects no row names): listed
        // here, the plan checks its objects in that listing instead of one lookup each.
        listed =
            ListingRule.listsEveryRun(records: rows.count)
            || !sized && ListingRule.worthListing(entries: entries, records: rows.count)
        if listed { objects.preload() }
        opened = Mutex(Opened(index: index, objects: objects))
    }

    /// No other connection has committed since the rows were read.
    public var isCurrent: Bool {
        opened.withLock { (try? $0.index?.dataVersion()) == version }
    }

    /// The objects read ahead, for the run that uses the rows (nil once taken).
    public func takeObjects() -> sending ObjectDirectory? {
        opened.withLock { opened -> sending ObjectDirectory? in
            let objects = opened.objects
            opened.objects = nil
            return objects
        }
    }

    public func close() {
        opened.withLock { $0 = Opened() }
    }
}
