import FoundationEssentials
import WorkerFetch
import WorkerManifest
import WorkerStore

/// Entries that stand for several files (`URLKind.expands`: an artifact's tag for its layers),
/// resolved as a run starts, before its plan: the fetch stage asks where each points
/// (`Locator.parts`), and the entry is replaced by its parts, each pinned by its hash, in the tree
/// below the entry (`ManifestSet.expanding`). What changed there is then an updated entry, and the
/// report pins each part. An entry whose parts cannot be had stops the run (exit 3), as a remote
/// manifest that cannot be had does — exit 2 when the credentials or a request were refused
/// (another run with the same settings fails alike); `--offline` asks nobody, so it cannot read them.
extension SyncEngine {
    /// `worker manifest URL`: the parts `url` stands for, each pinned by its hash.
    public func expandedManifest(_ url: String) async throws(SyncFailure) -> [ManifestWriter.Item] {
        let set = ManifestSet(
            manifests: [Manifest(path: url, name: "", headers: [], localRoot: "/", entryCount: 1)],
            entries: [ManifestEntry(url: url, manifest: 0, line: 1, column: 1)])
        let expanded = try await resolvingExpansions(set)
        return expanded.entries.indices.compactMap { position in
            expanded.entries.hash(at: position).map { ManifestWriter.Item(url: expanded.entries.url(at: position), sha256: $0.hex) }
        }
    }

    func resolvingExpansions(_ set: ManifestSet) async throws(SyncFailure) -> ManifestSet {
        try await expanding(set).set
    }

    /// The set with its entries that stand for several files replaced by their parts, and the
    /// run's locator with what reading them asked (a registry reached, its token: the downloads
    /// that follow ask nothing again).
    func expanding(_ set: ManifestSet) async throws(SyncFailure) -> (set: ManifestSet, locator: Locator) {
        var positions: [Int] = []
        for position in set.entries.indices where set.entries.withURL(at: position, { URLKinds.kind(utf8: $0)?.expandedForm != nil }) {
            let url = set.entries.url(at: position)
            if URLKinds.kind(of: url)?.expands(url, pinned: set.entries.hash(at: position) != nil) == true { positions.append(position) }
        }
        guard let first = positions.first else { return (set, options.fetch.locator) }
        guard !options.offline else {
            throw .manifestUnavailable(
                "\(set.entries.url(at: first)): the files it stands for are read from its origin, which --offline does not ask")
        }
        let store: ContentStore
        do {
            store = try ContentStore(root: Self.scratchCacheDirectory)
        } catch {
            throw .cache(error)
        }
        let urls = positions.map { set.entries.url(at: $0) }
        // Where else each may be read: its own mirrors, then its manifest's map's.
        var mirrors: [String: [String]] = [:]
        for (position, url) in zip(positions, urls) {
            let entry = set.entries[position]
            let listed = entry.mirrors + set.manifests[entry.manifest].mirrors.mirrors(for: url)
            if !listed.isEmpty { mirrors[url] = listed }
        }
        let (results, locator) = await options.fetch.locator.parts(of: urls, mirrors: mirrors, store: store, settings: options.fetch)
        var parts: [Int: [ManifestSet.Part]] = [:]
        for (position, url) in zip(positions, urls) {
            switch results[url] {
            case .success(let list)?: parts[position] = list
            case .failure(let problem)? where problem.refused: throw .refused(problem.description)
            case .failure(let problem)?: throw .manifestUnavailable(problem.description)
            case nil: throw .manifestUnavailable("\(url): not read")
            }
        }
        switch set.expanding(parts) {
        case .success(let expanded): return (expanded, locator)
        case .failure(let errors): throw .manifest(errors)
        }
    }
}
