/// One HTTP header sent with every request of a manifest. The value may be a secret.
public struct RequestHeader: Sendable, Equatable {
    public let name: String
    public let value: String
}

/// One entry to keep in the cache: a resolved URL and, optionally, the content hash it must have.
public struct ManifestEntry: Sendable, Equatable {
    /// Absolute `http`/`https` URL, or `file://` + absolute path for entries local to the manifest.
    public let url: String
    public let hash: ContentHash?
    /// Index into `ManifestSet.manifests` of the manifest that first listed this URL.
    public let manifest: Int
    public let line: Int
    public let column: Int
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
}

/// Every manifest of a run, validated, with their entries merged: one entry per distinct URL.
public struct ManifestSet: Sendable {
    public let manifests: [Manifest]
    public let entries: [ManifestEntry]
    /// Every entry's place in a tree, sorted by path (an entry listed at two paths is there
    /// twice); empty unless the loader was asked for it (`ManifestLoader.collectsTree`).
    public let tree: [TreeEntry]

    public init(manifests: [Manifest], entries: [ManifestEntry], tree: [TreeEntry] = []) {
        self.manifests = manifests
        self.entries = entries
        self.tree = tree
    }
}
