/// One HTTP header sent with every request of a manifest. The value may be a secret.
package struct RequestHeader: Sendable, Equatable {
    package let name: String
    package let value: String
}

/// A validated manifest: its metadata; its entries live in the `ManifestSet`.
package struct Manifest: Sendable {
    package let path: String
    package let name: String
    package let baseURL: String?
    package let headers: [RequestHeader]
    /// The manifest's folder (absolute, symlinks resolved): where relative entries live without `base_url`.
    package let localRoot: String
    /// How many entries the file lists (before merging URLs listed more than once).
    package let entryCount: Int
    /// The top-level `mirrors`: for its entries pinned by a hash, after their own.
    package var mirrors = ManifestMirrors()
    /// The header's `serial` and `expires` (Unix seconds), when written.
    package var serial: Int64?
    package var expires: Double?
    package var serialPosition: (line: Int, column: Int) = (0, 0)
    /// Where `name` is written; nil when the manifest has none (its name is its file's).
    package var namePosition: (line: Int, column: Int)?
    package var expiresPosition: (line: Int, column: Int) = (0, 0)

    package init(
        path: String,
        name: String,
        baseURL: String? = nil,
        headers: [RequestHeader],
        localRoot: String,
        entryCount: Int,
        mirrors: ManifestMirrors = ManifestMirrors()
    ) {
        self.path = path
        self.name = name
        self.baseURL = baseURL
        self.headers = headers
        self.localRoot = localRoot
        self.entryCount = entryCount
        self.mirrors = mirrors
    }
}

/// Every manifest of a run, validated, with their entries merged: one entry per distinct URL.
package struct ManifestSet: Sendable {
    package let manifests: [Manifest]
    package let entries: ManifestEntries
    /// Every entry's place in a tree, sorted by path (an entry listed at two paths is there
    /// twice); empty unless the loader was asked for it (`ManifestLoader.collectsTree`).
    package let tree: [TreeEntry]

    package init(manifests: [Manifest], entries: ManifestEntries, tree: [TreeEntry] = []) {
        self.manifests = manifests
        self.entries = entries
        self.tree = tree
    }

    package init(manifests: [Manifest], entries: [ManifestEntry], tree: [TreeEntry] = []) {
        self.init(manifests: manifests, entries: ManifestEntries(entries), tree: tree)
    }
}
