/// One row of the index: a URL and the stored object that is its current version.
public struct IndexRecord: Sendable, Equatable {
    public var url: String
    /// The manifest hash it was verified against (normalized), nil for hashless entries.
    public var hash: String?
    /// SHA-256 hex of the stored bytes: the object's name.
    public var object: String
    public var size: Int64
    public var fetchedAt: Double
    /// Last time a synced manifest named this URL (or `worker path` read it).
    public var lastUsed: Double
    public var etag: String?
    public var lastModified: String?
    /// Fetched with credentials (manifest headers, URL user info): its object is not uploaded
    /// to a shared tier unless the tier is declared as private as the origin.
    public var isPrivate: Bool

    public init(
        url: String, hash: String?, object: String, size: Int64, fetchedAt: Double, lastUsed: Double,
        etag: String? = nil, lastModified: String? = nil, isPrivate: Bool = false
    ) {
        self.url = url
        self.hash = hash
        self.object = object
        self.size = size
        self.fetchedAt = fetchedAt
        self.lastUsed = lastUsed
        self.etag = etag
        self.lastModified = lastModified
        self.isPrivate = isPrivate
    }
}

/// What the last sync of one manifest did, for `worker status`.
public struct ManifestRun: Sendable, Equatable {
    public var path: String
    public var name: String
    public var entries: Int
    public var finishedAt: Double
    public var failed: Int

    public init(path: String, name: String, entries: Int, finishedAt: Double, failed: Int) {
        self.path = path
        self.name = name
        self.entries = entries
        self.finishedAt = finishedAt
        self.failed = failed
    }
}

/// An entry whose last sync failed (`worker status` lists them as pending).
public struct FailureRecord: Sendable, Equatable, Codable {
    public var url: String
    public var reason: String
    public var error: String
    public var attempts: Int
    public var at: Double
    /// Only `get` or `manifest --urls` asked for the URL (no manifest entry failed on it): the
    /// failure ages out after `FailureRecord.getOnlyLifetime` instead of staying until it clears.
    public var getOnly = false

    /// How long a failure of a URL only `get` asked for stays pending.
    static let getOnlyLifetime = 86400.0

    public init(url: String, reason: String, error: String, attempts: Int, at: Double, getOnly: Bool = false) {
        self.url = url
        self.reason = reason
        self.error = error
        self.attempts = attempts
        self.at = at
        self.getOnly = getOnly
    }

    enum CodingKeys: String, CodingKey {
        case url, reason, error, attempts, at
        case getOnly = "get_only"
    }
}

/// What the index holds, in numbers.
public struct CacheStatistics: Sendable, Equatable {
    public var entries: Int
    public var objects: Int
    /// Sum of entry sizes (what the cache would take without deduplication).
    public var entryBytes: Int64
    /// Sum of distinct object sizes (what it takes).
    public var objectBytes: Int64
    public var oldestFetch: Double?
    public var newestFetch: Double?
    public var pendingFailures: Int
}

/// An origin a sync gave up on (refused, unreachable, or failing with 5xx / 429), until a later
/// run reaches it again.
public struct UnhealthyOrigin: Sendable, Equatable, Codable {
    public var origin: String
    /// When a run first found it down.
    public var since: Double
    public var problem: String
    /// The last run that found it down.
    public var checked: Double
}
