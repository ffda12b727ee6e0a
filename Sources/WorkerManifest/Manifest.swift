/// One HTTP header sent with every request of a manifest. The value may be a secret.
public struct RequestHeader: Sendable, Equatable {
    public let name: String
    public let value: String
}

/// A validated manifest: its metadata; its entries live in the `ManifestSet`.
public struct Manifest: Sendable {
    public let path: String
    public let name: String
    public let baseURL: String?
    public let headers: [RequestHeader]
    /// The manifest's folder (absolute, symlinks resolved): where relative entries live without `base_url`.
    public let localRoot: String
    /// How many entries the file lists (before merging URLs listed more than once).
    public let entryCount: Int
    /// The top-level `mirrors`: for its entries pinned by a hash, after their own.
    public var mirrors = ManifestMirrors()
    /// The header's `serial` and `expires` (Unix seconds), when written.
    public var serial: Int64?
    public var expires: Double?
    public var serialPosition: (line: Int, column: Int) = (0, 0)
    /// Where `name` is written; nil when the manifest has none (its name is its file's).
    public var namePosition: (line: Int, column: Int)?
    public var expiresPosition: (line: Int, column: Int) = (0, 0)

    public init(
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
public struct ManifestSet: Sendable {
    public let manifests: [Manifest]
    public let entries: ManifestEntries
    /// Every entry's place in a tree, sorted by path (an entry listed at two paths is there
    /// twice); empty unless the loader was asked for it (`ManifestLoader.collectsTree`).
    public let tree: [TreeEntry]

    public init(manifests: [Manifest], entries: ManifestEntries, tree: [TreeEntry] = []) {
        self.manifests = manifests
        self.entries = entries
        self.tree = tree
    }

    public init(manifests: [Manifest], entries: [ManifestEntry], tree: [TreeEntry] = []) {
        self.init(manifests: manifests, entries: ManifestEntries(entries), tree: tree)
    }
}
