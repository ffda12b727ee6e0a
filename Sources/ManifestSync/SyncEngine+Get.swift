import FoundationEssentials
import Glibc

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
            throw .manifest(ManifestErrors(diagnostics: [ManifestDiagnostic(path: "get", line: 0, column: 0, message: problem)],
                                           truncated: false))
        }
        let report = try await syncWithoutManifest(
            [ManifestEntry(url: url, hash: hash, manifest: 0, line: 0, column: 0)], name: "get", count: 1)
        let entry = report.entries.first
        guard entry?.status != .failed, let path = entry?.path else { return Lookup(path: nil, entry: entry) }
        return Lookup(path: path, entry: entry)
    }
}

/// `worker manifest --urls`: each URL downloaded once through the cache (which it warms), and
/// pinned to the SHA-256 of what was stored.
extension SyncEngine {
    /// The pinned URLs in the order given (duplicates once), and the entries that failed.
    /// `source` names the list in errors (`urls.txt:3: …`).
    public func pin(urls: [String], source: String) async throws(SyncFailure) -> (items: [ManifestWriter.Item], failed: [SyncReport.Entry]) {
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
        let report = try await syncWithoutManifest(entries, name: source, count: urls.count)
        var items: [ManifestWriter.Item] = []
        var failed: [SyncReport.Entry] = []
        // With every row kept, the report's entries are the manifest's, in order; its URLs are
        // redacted, so the manifest takes them from the list.
        for (entry, row) in zip(entries, report.entries) {
            if row.status == .failed {
                failed.append(row)
            } else if let path = row.path {
                items.append(ManifestWriter.Item(url: entry.url, sha256: PathName.lastComponent(path)))
            }
        }
        return (items, failed)
    }
}

extension SyncEngine {
    /// A sync of entries that come from no manifest file: every row kept in the report, nothing
    /// recorded per manifest.
    func syncWithoutManifest(_ entries: [ManifestEntry], name: String, count: Int) async throws(SyncFailure) -> SyncReport {
        let manifest = Manifest(path: name, name: name, baseURL: nil, headers: [], localRoot: "/", entryCount: count)
        var options = options
        options.recordsManifestRuns = false
        options.reportAll = true
        options.listLimit = nil
        do {
            return try await SyncEngine(options: options, logger: logger).sync(ManifestSet(manifests: [manifest], entries: entries))
        } catch {
            throw .cache(error)
        }
    }

    /// Why `url` is not one a manifest entry could name absolutely (the manifest reader's own
    /// check, so what `get` or `manifest --urls` takes a manifest takes too), or nil.
    static func urlProblem(_ url: String) -> String? {
        switch URLResolver.absolute(url) {
        case .success?: nil
        case .failure(let problem)?: problem.message
        case nil: "'\(Redact.short(Redact.url(url), limit: 80))' is not an absolute http or https URL"
        }
    }
}
