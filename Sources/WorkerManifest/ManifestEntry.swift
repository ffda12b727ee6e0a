/// One entry to keep in the cache: a resolved URL and, optionally, the content hash it must have.
package struct ManifestEntry: Sendable, Equatable {
    /// Absolute `http`/`https` URL, or `file://` + absolute path for entries local to the manifest.
    package let url: String
    package let hash: ContentHash?
    /// Index into `ManifestSet.manifests` of the manifest that first listed this URL.
    package let manifest: Int
    package let line: Int
    package let column: Int
    /// The entry's own `mirrors` (absolute http(s) URLs), tried in order after its URL fails.
    package var mirrors: [String] = []

    package init(url: String, hash: ContentHash? = nil, manifest: Int, line: Int, column: Int, mirrors: [String] = []) {
        self.url = url
        self.hash = hash
        self.manifest = manifest
        self.line = line
        self.column = column
        self.mirrors = mirrors
    }
}
