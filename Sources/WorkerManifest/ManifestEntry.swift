/// One entry to keep in the cache: a resolved URL and, optionally, the content hash it must have.
public struct ManifestEntry: Sendable, Equatable {
    /// Absolute `http`/`https` URL, or `file://` + absolute path for entries local to the manifest.
    public let url: String
    public let hash: ContentHash?
    /// Index into `ManifestSet.manifests` of the manifest that first listed this URL.
    public let manifest: Int
    public let line: Int
    public let column: Int
    /// The entry's own `mirrors` (absolute http(s) URLs), tried in order after its URL fails.
    public var mirrors: [String] = []

    public init(url: String, hash: ContentHash? = nil, manifest: Int, line: Int, column: Int, mirrors: [String] = []) {
        self.url = url
        self.hash = hash
        self.manifest = manifest
        self.line = line
        self.column = column
        self.mirrors = mirrors
    }
}
