import WorkerSupport

/// Entries that stand for several (an artifact's tag for its layers): the set with each such
/// entry replaced by its parts, in its place — each part an entry of the same manifest, line and
/// column, pinned by its hash, in the tree at its name: below the entry's `path` when it has one
/// (a folder), else at the top. The tree is checked again: two parts, or a part and another entry, at one path are
/// located manifest errors. A part whose URL the set lists already is that entry.
extension ManifestSet {
    /// One part of an entry.
    public struct Part: Sendable, Equatable {
        public let url: String
        public let hash: ContentHash
        /// Its path below the entry's (a relative tree path; empty: the entry's own path).
        public let name: String

        public init(url: String, hash: ContentHash, name: String) {
            self.url = url
            self.hash = hash
            self.name = name
        }
    }

    /// Why the parts of an entry could not be had (the URL, then what its origin said).
    public struct PartsProblem: Error, Sendable, CustomStringConvertible {
        public let description: String
        /// Refused: the credentials by the origin, or a request by the rules (`--rewrite-strict`,
        /// credentials that would go where they must not): another run with the same settings
        /// fails alike.
        public let refused: Bool
        public init(_ description: String, refused: Bool = false) {
            self.description = description
            self.refused = refused
        }
    }

    /// This set with the entry at each key of `parts` replaced by its parts.
    public func expanding(_ parts: [Int: [Part]]) -> Result<ManifestSet, ManifestErrors> {
        guard !parts.isEmpty else { return .success(self) }
        var expanded = ManifestEntries()
        var moved = [Int](repeating: -1, count: entries.count)
        var listed: [String: Int] = [:]
        for position in entries.indices where parts[position] == nil && listed[entries.url(at: position)] == nil {
            listed[entries.url(at: position)] = position
        }
        var partPositions: [Int: [Int]] = [:]
        for position in entries.indices {
            let entry = entries[position]
            guard let list = parts[position] else {
                moved[position] = expanded.count
                expanded.append(entry)
                continue
            }
            for part in list {
                if let known = listed[part.url] {
                    partPositions[position, default: []].append(-1 - known)
                    continue
                }
                listed[part.url] = -1
                partPositions[position, default: []].append(expanded.count)
                expanded.append(
                    url: part.url, hash: part.hash, manifest: entry.manifest, line: entry.line, column: entry.column,
                    mirrors: [])
            }
        }
        // Entries listed before an expanded one keep their place; a part that is a listed entry
        // points at that entry's new place.
        func resolved(_ position: Int) -> Int { position >= 0 ? position : moved[-1 - position] }
        guard !tree.isEmpty else { return .success(ManifestSet(manifests: manifests, entries: expanded)) }
        var newTree: [TreeEntry] = []
        for place in tree {
            guard let list = parts[place.entry], let positions = partPositions[place.entry] else {
                newTree.append(
                    TreeEntry(
                        path: place.path, entry: moved[place.entry], manifest: place.manifest, line: place.line,
                        column: place.column))
                continue
            }
            // A tree place at the entry's own position is derived from its URL; one elsewhere is
            // its `path:`, a folder for its parts.
            let entry = entries[place.entry]
            let folder = place.line == entry.line && place.column == entry.column ? nil : place.path
            for (part, position) in zip(list, positions) {
                let path = part.name.isEmpty ? place.path : folder.map { $0 + "/" + part.name } ?? part.name
                newTree.append(
                    TreeEntry(
                        path: path, entry: resolved(position),
                        manifest: place.manifest,
                        line: place.line, column: place.column))
            }
        }
        let sorted = TreeConflicts.sorted(newTree)
        let problems = TreeConflicts.find(sorted, manifests: manifests)
        guard problems.isEmpty else { return .failure(ManifestErrors(diagnostics: problems, truncated: false)) }
        return .success(ManifestSet(manifests: manifests, entries: expanded, tree: sorted))
    }
}
