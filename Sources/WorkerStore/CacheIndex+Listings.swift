/// What `worker manifest s3://…` last saw of each object it pinned: the listing's ETag, size and
/// date, and the SHA-256 it pinned. A later run asks only about objects whose listing differs.
public struct ListedObject: Sendable, Equatable {
    public let url: String
    public let etag: String
    public let size: Int64
    public let lastModified: String
    public let sha256: String

    public init(url: String, etag: String, size: Int64, lastModified: String, sha256: String) {
        self.url = url
        self.etag = etag
        self.size = size
        self.lastModified = lastModified
        self.sha256 = sha256
    }

    /// Whether the listing says the same of the object (ETag, size and date unchanged).
    public func isSameListing(as other: ListedObject) -> Bool {
        etag == other.etag && size == other.size && lastModified == other.lastModified
    }
}

extension CacheIndex {
    /// The objects recorded under `prefix` (an `s3://BUCKET/PREFIX/` URL), by URL; none in an
    /// index made before the table existed.
    public func listedObjects(under prefix: String) throws(CacheError) -> [String: ListedObject] {
        try wrap {
            let exists = try database.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'listed_objects'")
            guard try exists.step() else { return [:] }
            // A range on the primary key: every URL that starts with the prefix.
            let statement = try database.prepare(
                """
                SELECT url, etag, size, last_modified, sha256 FROM listed_objects WHERE url >= ? AND url < ?
                """)
            statement.bind([.text(prefix), .text(prefix + "\u{10FFFF}")])
            var found: [String: ListedObject] = [:]
            while try statement.step() {
                let object = ListedObject(
                    url: statement.text(0) ?? "", etag: statement.text(1) ?? "", size: statement.int(2),
                    lastModified: statement.text(3) ?? "", sha256: statement.text(4) ?? "")
                found[object.url] = object
            }
            return found
        }
    }

    /// Replaces what is recorded under `prefix` with `objects` (objects no longer listed go).
    public func recordListing(under prefix: String, _ objects: [ListedObject]) throws(CacheError) {
        try wrap {
            try database.transaction {
                try database.prepare("DELETE FROM listed_objects WHERE url >= ? AND url < ?")
                    .run([.text(prefix), .text(prefix + "\u{10FFFF}")])
                let insert = try database.prepare(
                    """
                    INSERT INTO listed_objects(url, etag, size, last_modified, sha256) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT(url) DO UPDATE SET etag = excluded.etag, size = excluded.size,
                        last_modified = excluded.last_modified, sha256 = excluded.sha256
                    """)
                for object in objects {
                    try insert.run([
                        .text(object.url), .text(object.etag), .int(object.size), .text(object.lastModified),
                        .text(object.sha256),
                    ])
                }
            }
        }
    }
}
