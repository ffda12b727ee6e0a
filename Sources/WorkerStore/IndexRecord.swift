/// One row of the index: a URL and the stored object that is its current version.
package struct IndexRecord: Sendable, Equatable {
    package var url: String
    /// The manifest hash it was verified against (normalized), nil for hashless entries.
    package var hash: String?
    /// SHA-256 hex of the stored bytes: the object's name.
    package var object: String
    package var size: Int64
    package var fetchedAt: Double
    /// Last time a synced manifest named this URL (or `worker path` read it).
    package var lastUsed: Double
    package var etag: String?
    package var lastModified: String?
    /// Fetched with credentials (manifest headers, URL user info): its object is not uploaded
    /// to a shared tier unless the tier is declared as private as the origin.
    package var isPrivate: Bool

    package init(url: String, hash: String?, object: String, size: Int64, fetchedAt: Double, lastUsed: Double,
                etag: String? = nil, lastModified: String? = nil, isPrivate: Bool = false) {
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
package struct ManifestRun: Sendable, Equatable {
    package var path: String
    package var name: String
    package var entries: Int
    package var finishedAt: Double
    package var failed: Int

    package init(path: String, name: String, entries: Int, finishedAt: Double, failed: Int) {
        self.path = path
        self.name = name
        self.entries = entries
        self.finishedAt = finishedAt
        self.failed = failed
    }
}

/// An entry whose last sync failed (`worker status` lists them as pending).
package struct FailureRecord: Sendable, Equatable, Codable {
    package var url: String
    package var reason: String
    package var error: String
    package var attempts: Int
    package var at: Double
    /// Only `get` or `manifest --urls` asked for the URL (no manifest entry failed on it): the
    /// failure ages out after `FailureRecord.getOnlyLifetime` instead of staying until it clears.
    package var getOnly = false

    /// How long a failure of a URL only `get` asked for stays pending.
    package static let getOnlyLifetime = 86400.0

    package init(url: String, reason: String, error: String, attempts: Int, at: Double, getOnly: Bool = false) {
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
package struct CacheStatistics: Sendable, Equatable {
    package var entries: Int
    package var objects: Int
    /// Sum of entry sizes (what the cache would take without deduplication).
    package var entryBytes: Int64
    /// Sum of distinct object sizes (what it takes).
    package var objectBytes: Int64
    package var oldestFetch: Double?
    package var newestFetch: Double?
    package var pendingFailures: Int
}

/// An origin a sync gave up on (refused, unreachable, or failing with 5xx / 429), until a later
/// run reaches it again.
package struct UnhealthyOrigin: Sendable, Equatable, Codable {
    package var origin: String
    /// When a run first found it down.
    package var since: Double
    package var problem: String
    /// The last run that found it down.
    package var checked: Double
}
