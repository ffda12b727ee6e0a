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
    /// URL → index into `entries`.
    let positions: URLPositions

    public init(manifests: [Manifest], entries: [ManifestEntry]) {
        var positions = URLPositions()
        positions.reserve(entries.count)
        for (offset, entry) in entries.enumerated() where positions.find(entry.url, in: entries) == nil {
            positions.insert(entry.url, at: offset)
        }
        self.init(manifests: manifests, entries: entries, positions: positions)
    }

    init(manifests: [Manifest], entries: [ManifestEntry], positions: URLPositions) {
        self.manifests = manifests
        self.entries = entries
        self.positions = positions
    }
}

/// URL → entry index, keyed by a 64-bit FNV-1a digest of the URL. A `[String: Int]` compares
/// whole keys along every probe, and manifest URLs share long prefixes: at a million entries that
/// was a fifth of `worker plan`. Digest collisions fall back to a map keyed by the URL itself.
struct URLPositions: Sendable {
    private var primary: [UInt64: Int32] = [:]
    private var collisions: [String: Int32] = [:]
    private let digest: @Sendable (String) -> UInt64

    /// `digest` is replaceable so tests can force collisions.
    init(digest: @escaping @Sendable (String) -> UInt64 = URLPositions.fnv1a) {
        self.digest = digest
    }

    mutating func reserve(_ count: Int) {
        primary.reserveCapacity(count)
    }

    func find(_ url: String, in entries: [ManifestEntry]) -> Int? {
        find(url) { entries[$0].url }
    }

    /// The position of `url`, given how to read the URL stored at a position.
    func find(_ url: String, urlAt: (Int) -> String) -> Int? {
        guard let index = primary[digest(url)] else { return nil }
        if urlAt(Int(index)) == url { return Int(index) }
        return collisions[url].map(Int.init)
    }

    /// Records `url` at `index`; call only after `find` returned nil.
    mutating func insert(_ url: String, at index: Int) {
        let key = digest(url)
        if primary[key] == nil {
            primary[key] = Int32(index)
        } else {
            collisions[url] = Int32(index)
        }
    }

    static func fnv1a(_ url: String) -> UInt64 {
        var url = url
        return url.withUTF8 { bytes in
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in bytes {
                hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            }
            return hash
        }
    }
}
