import FoundationEssentials
import WorkerFetch
import WorkerManifest
import WorkerReport
import WorkerStore

/// Options of a `sync` run beyond the manifests.
public struct SyncOptions: Sendable {
    public var cacheDirectory: String
    public var fetch = FetchSettings()
    /// Seconds to wait for another run's lock; nil waits without limit.
    public var waitLock: Double?
    public var prune = false
    /// Prune only orphans not used for this many seconds (a grace period; 0 = at once).
    public var pruneAfter = 0.0
    /// Check hashless entries with conditional requests.
    public var revalidate = false
    /// Whether the run is recorded per manifest for `worker status` (not for `get`'s one URL).
    var recordsManifestRuns = true
    /// Download and verify every selected entry again (`--refresh`).
    public var refresh = false
    /// Download every entry without a hash again, in full, and never serve a remote manifest's
    /// kept copy (`--refresh-unpinned`: a cache restored from somewhere the run cannot vouch for).
    public var refreshUnpinned = false
    /// No network: report what is missing or out of date, fetch nothing.
    public var offline = false
    /// Handle only the entries of this shard (orphans too are only this shard's).
    public var shard = Shard.all
    /// The publishers' keys and the remote manifests' rules (`--trusted-keys`, `--signature`,
    /// `--manifest-max-age`).
    public var trust = ManifestTrust()
    /// URLs the index keeps whatever the manifests list (remote manifests and their signatures):
    /// never pruned as orphans.
    var keptURLs: Set<String> = []
    /// Whether the command may create the cache (`sync`, `get`, `manifest --urls`); a remote
    /// manifest of one that may not (`plan`, `verify`) is read through a scratch cache instead.
    public var mayCreateCache = true
    /// Called after each finished download (from one task at a time).
    public var onProgress: (@Sendable (SyncProgress) -> Void)?
    /// The largest share of the index `--prune` may remove in one run (0...1).
    public var pruneMax = 0.5
    public var force = false
    /// How many rows other than failures the caller shows of the report itself (the text
    /// summary's list; nil: all). The outputs decide the rest (`SyncLedger.rowsKept`).
    public var shownRows: Int?
    /// Seconds the whole run may take; entries not done by then fail as `cancelled`.
    public var deadline: Double?
    /// Rows committed per batch (one flush each), and the longest a finished entry waits uncommitted.
    /// Small enough that the flushes overlap the downloads (the last batch's flush is what a run
    /// waits for at its end; docs/ARCHITECTURE.md, "Measurements behind the code").
    public var batchSize = 1024
    var batchInterval = 0.5
    /// Files to write at the end of the run (reports, metrics), and the failures it may have.
    public var outputs = SyncOutputs()
    public var failureBudget = FailureBudget.none
    /// Body bytes per batch: large bodies are flushed while later ones still download, so the
    /// run does not end waiting for all of them to reach the disk at once.
    var batchBytes: Int64 = 64 << 20
    /// Publish the manifests' entries as a tree of files at their names here after the run
    /// (`--tree`): `TreePublisher`.
    public var tree: String?
    /// How the tree names its files (`--layout`): at their tree paths, or an app library's layout.
    public var treeLayout = TreeLayout.tree
    /// Whether the manifests' tree paths are read (a `--tree` in the tree layout).
    var collectsTree: Bool { tree != nil && treeLayout.namesByTreePath }
    /// Switch the tree only to a version that holds every entry (`--tree-complete`).
    public var treeComplete = false
    /// Keep each item's outcome (status and SHA-256) for the caller (`get`, `manifest --urls`).
    var keepsOutcomes = false

    public init(cacheDirectory: String) {
        self.cacheDirectory = cacheDirectory
    }
}
