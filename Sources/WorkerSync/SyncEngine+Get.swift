import FoundationEssentials
import Glibc
import WorkerManifest
import WorkerPlan
import WorkerReport
import WorkerStore
import WorkerSupport

/// `worker get URL`: SDImageCache's read-through lookup for a command line — the index, then the
/// object file, then the network. A miss is a one-entry sync through the same pipeline (the same
/// verification, storage, lock and index rules), so the entry then exists like any other.
extension SyncEngine {
    /// What `get` found or fetched.
    public struct Lookup: Sendable {
        /// The object file, when the URL is cached (now).
        public let path: String?
        /// The entry's report row: its status (`unchanged` for a hit), or why it failed.
        public let entry: SyncReport.Entry?
    }

    /// Looks `url` up, fetching it on a miss; `hash` pins the content it must have.
    public func get(url: String, hash: ContentHash?) async throws(SyncFailure) -> Lookup {
        if let problem = Self.urlProblem(url) {
            throw .manifest(
                ManifestErrors(
                    diagnostics: [ManifestDiagnostic(path: "get", line: 0, column: 0, message: problem)],
                    truncated: false))
        }
        let entry = ManifestEntry(url: url, hash: hash, manifest: 0, line: 0, column: 0)
        if !options.refresh, let hit = try cached(entry) { return hit }
        let result = try await syncWithoutManifest([entry], name: "get", count: 1)
        let outcome = result.ledger.outcome(of: 0)
        guard let outcome, outcome.status != .failed, let object = outcome.sha256 else {
            return Lookup(path: nil, entry: outcome?.row)
        }
        return Lookup(path: CacheLayout.objectPath(options.cacheDirectory, object), entry: outcome.row)
    }
}

/// `worker manifest --urls`: each URL downloaded once through the cache (which it warms), and
/// pinned to the SHA-256 of what was stored. A version the cache holds is never pinned without
/// asking the origin first (a conditional request; a 200 replaces it): a pin is what runners will
/// fetch for good. `--offline` pins what the cache has, and the caller says so.
extension SyncEngine {
    /// The pinned URLs in the order given (duplicates once), and the entries that failed.
    /// `source` names the list in errors (`urls.txt:3: …`).
    public func pin(urls: [String], source: String) async throws(SyncFailure) -> (items: [ManifestWriter.Item], failed: [SyncReport.Entry])
    {
        var diagnostics: [ManifestDiagnostic] = []
        var entries: [ManifestEntry] = []
        var seen = Set<String>()
        for (offset, url) in urls.enumerated() {
            if let problem = Self.urlProblem(url) {
                diagnostics.append(ManifestDiagnostic(path: source, line: offset + 1, column: 1, message: problem))
                continue
            }
            if seen.insert(url).inserted {
                entries.append(ManifestEntry(url: url, hash: nil, manifest: 0, line: offset + 1, column: 1))
            }
        }
        guard diagnostics.isEmpty else { throw .manifest(ManifestErrors(diagnostics: diagnostics, truncated: false)) }
        var revalidating = options
        revalidating.revalidate = !options.offline
        let result = try await SyncEngine(options: revalidating, context: context)
            .syncWithoutManifest(entries, name: source, count: urls.count)
        var items: [ManifestWriter.Item] = []
        var failed: [SyncReport.Entry] = []
        // Plan items are the list's URLs, in order: each one's outcome names what it stored (the
        // manifest takes the URL from the list: the report's are redacted). A failure is shown
        // with its row.
        for (offset, entry) in entries.enumerated() {
            guard let outcome = result.ledger.outcome(of: offset) else { continue }
            if outcome.status == .failed {
                failed.append(outcome.row)
            } else if let sha256 = outcome.sha256 {
                items.append(ManifestWriter.Item(url: entry.url, sha256: sha256))
            }
        }
        return (items, failed)
    }
}

extension SyncEngine {
    /// `get`'s hit, read without the lock or a write (it answers while syncs write, and in a cache
    /// this user may only read): the row holds the version asked for and its object is there,
    /// of the row's size. nil on a miss, which a sync then fetches.
    func cached(_ entry: ManifestEntry) throws(SyncFailure) -> Lookup? {
        let indexPath = CacheLayout.indexPath(options.cacheDirectory)
        guard access(indexPath, F_OK) == 0 else { return nil }
        // A writer may replace the row's version between the read of the row and of its object,
        // and an index read as immutable (a reader without its WAL) may be caught mid-commit:
        // such a read is tried again once the commit in progress is done.
        var attempt = 0
        var found: (IndexRecord, String)?
        while true {
            attempt += 1
            let record: IndexRecord?
            do {
                record = try CacheIndex(path: indexPath, create: false, readOnly: true).record(url: entry.url)
            } catch .index(_, let cause) where attempt < 3 && (cause.isCorrupt || cause.isBusy) {
                CacheLock.waitForCommit(directory: options.cacheDirectory, upTo: 2)
                continue
            } catch {
                throw .cache(error)
            }
            guard let record, Planner.isSameVersion(entry, record) else { return nil }
            let path = CacheLayout.objectPath(options.cacheDirectory, record.object)
            var info = stat()
            let present = lstat(path, &info) == 0
            if present, (info.st_mode & S_IFMT) == S_IFREG, Int64(info.st_size) == record.size {
                found = (record, path)
                break
            }
            // Gone: replaced by a writer since the row was read; the row is read again.
            guard !present, errno == ENOENT, attempt < 3 else { return nil }
            CacheLock.waitForCommit(directory: options.cacheDirectory, upTo: 2)
        }
        guard let (record, path) = found else { return nil }
        CacheMaintenance.recordUse(record, url: entry.url, cacheDirectory: options.cacheDirectory)
        let row = SyncReport.Entry(
            url: Redact.url(entry.url), hash: entry.hash?.description, status: .unchanged,
            bytes: record.size, path: path, manifest: "get")
        return Lookup(path: path, entry: row)
    }

    /// A sync of entries that come from no manifest file: each item's outcome kept with its row
    /// (the report itself lists only failures), nothing recorded per manifest.
    func syncWithoutManifest(_ entries: [ManifestEntry], name: String, count: Int) async throws(SyncFailure) -> SyncResult {
        let manifest = Manifest(path: name, name: name, baseURL: nil, headers: [], localRoot: "/", entryCount: count)
        // A run of these URLs alone: what belongs to the manifests' run (their tree, their prune,
        // their shard) is not its own — a remote manifest fetched with `--tree` published the
        // tree of its one document, an empty version.
        var options = options
        options.recordsManifestRuns = false
        options.tree = nil
        options.prune = false
        options.shard = .all
        options.outputs = SyncOutputs()
        options.shownRows = 0
        options.keepsOutcomes = true
        return try await SyncEngine(options: options, context: context).syncLoaded(ManifestSet(manifests: [manifest], entries: entries))
    }

    /// Why `url` is not one a manifest entry could name absolutely (the manifest reader's own
    /// check, so what `get` or `manifest --urls` takes a manifest takes too), or nil.
    static func urlProblem(_ url: String) -> String? {
        switch URLResolver.absolute(url) {
        case .success?: nil
        case .failure(let problem)?: problem.message
        case nil: "'\(Redact.short(Redact.url(url), limit: 80))' is not an absolute http, https or s3 URL"
        }
    }
}
