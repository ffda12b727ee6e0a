import FoundationEssentials
import WorkerFetch
import WorkerManifest
import WorkerStore

/// Artifacts named by a tag (`oci://REGISTRY/REPOSITORY:TAG`), resolved as a run starts, before
/// its plan: the tag's manifest read from the registry (`RegistryAccess.layers`), the entry
/// replaced by one entry per titled layer, `oci://REGISTRY/REPOSITORY:TAG#TITLE` pinned by the
/// layer's digest, in the tree at its title (below the entry's `path`, when it has one). A tag that moves is
/// then an updated entry, and the report pins each layer's digest. A `:TAG#TITLE` entry without a
/// hash is pinned the same way. A tag that cannot be read stops the run (exit 3), as a remote
/// manifest that cannot be had does; `--offline` cannot read one.
extension SyncEngine {
    /// `worker manifest oci://REGISTRY/REPOSITORY:TAG`: the tag's titled layers as entries
    /// `oci://…:TAG#TITLE` pinned by their digests.
    public func artifactManifest(_ reference: OCIReference) async throws(SyncFailure) -> [ManifestWriter.Item] {
        guard let tagURL = reference.tagURL else { return [] }
        let set = ManifestSet(manifests: [Manifest(path: tagURL, name: reference.repository, headers: [], localRoot: "/", entryCount: 1)],
                              entries: [ManifestEntry(url: tagURL, manifest: 0, line: 1, column: 1)])
        let expanded = try await resolvingArtifacts(set)
        return expanded.entries.indices.compactMap { position in
            expanded.entries.hash(at: position).map { ManifestWriter.Item(url: expanded.entries.url(at: position), sha256: $0.hex) }
        }
    }

    func resolvingArtifacts(_ set: ManifestSet) async throws(SyncFailure) -> ManifestSet {
        var tags: [(position: Int, reference: OCIReference)] = []
        for position in set.entries.indices where set.entries.withURL(at: position, { URLKinds.kind(utf8: $0)?.id == .oci }) {
            guard let reference = OCIReference(set.entries.url(at: position)), reference.tag != nil,
                  reference.title == nil || set.entries.hash(at: position) == nil else { continue }
            tags.append((position, reference))
        }
        guard let first = tags.first else { return set }
        guard !options.offline else {
            throw .cache(.manifestUnavailable("\(first.reference.tagURL ?? ""): a tag is read from its registry, which --offline does not ask"))
        }
        let store: ContentStore
        do {
            store = try ContentStore(root: Self.scratchCacheDirectory)
        } catch {
            throw .cache(error)
        }
        let results = await RegistryAccess.layers(of: tags.map(\.reference), store: store, settings: options.fetch)
        var parts: [Int: [ManifestSet.Part]] = [:]
        for (position, reference) in tags {
            guard let tagURL = reference.tagURL else { continue }
            let layers: [ArtifactLayer]
            switch results[tagURL] {
            case .success(let read)?: layers = read
            case .failure(let problem)?: throw .cache(.manifestUnavailable("\(tagURL): \(problem.description)"))
            case nil: throw .cache(.manifestUnavailable("\(tagURL): not read"))
            }
            var list: [ManifestSet.Part] = []
            for layer in layers {
                // Layers without a title (an image's) are not files of the artifact.
                guard let title = layer.title, reference.title == nil || title == reference.title, TreePath.problem(title) == nil,
                      case .success(let hash) = ContentHash.parse("sha256:" + layer.digest) else { continue }
                list.append(ManifestSet.Part(url: tagURL + "#" + title, hash: hash, name: reference.title == nil ? title : ""))
            }
            guard !list.isEmpty else {
                throw .cache(.manifestUnavailable("\(tagURL): " + (reference.title.map { "no layer is titled '\($0)'" }
                    ?? "no layer has a title (org.opencontainers.image.title) to be a file")))
            }
            parts[position] = list
        }
        switch set.expanding(parts) {
        case .success(let expanded): return expanded
        case .failure(let errors): throw .manifest(errors)
        }
    }
}
