import FoundationEssentials
import Glibc
import WorkerManifest
import WorkerSupport

/// Point lookups: one URL's row, one object's references, one hash's stored object, the objects
/// of many URLs at once. Part of `CacheIndex` (all SQL stays in the `CacheIndex` files).
extension CacheIndex {
    /// Whether a row exists for `url`, damaged or not.
    func hasRow(url: String) throws(CacheError) -> Bool {
        try wrap {
            let statement = try database.prepare("SELECT 1 FROM entries WHERE url = ?")
            statement.bind([.text(key(url))])
            return try statement.step()
        }
    }

    /// The object each URL's row names (nil without a row), in the order given: one statement
    /// and one read transaction for all of them (a tree's thousands of lookups; each alone took
    /// and dropped the file's lock: two fcntl calls a row).
    public func objects(urls: [String]) throws(CacheError) -> [String?] {
        try wrap {
            try database.execute("BEGIN")
            defer { try? database.execute("COMMIT") }
            let statement = try database.prepare("SELECT object FROM entries WHERE url = ?")
            return try urls.map { url throws(SQLiteError) -> String? in
                statement.bind([.text(key(url))])
                guard try statement.step(), let object = statement.text(0), Hex.isLowercaseHex(object, length: 64) else {
                    return nil
                }
                return object
            }
        }
    }

    public func record(url: String) throws(CacheError) -> IndexRecord? {
        try wrap {
            let statement = try database.prepare(
                "SELECT url, hash, object, size, fetched_at, last_used, etag, last_modified FROM entries WHERE url = ?")
            statement.bind([.text(key(url))])
            guard try statement.step(), let object = statement.text(2), Hex.isLowercaseHex(object, length: 64) else {
                return nil
            }
            return IndexRecord(
                url: url, hash: statement.text(1), object: object,
                size: statement.int(3), fetchedAt: statement.double(4), lastUsed: statement.double(5),
                etag: statement.text(6), lastModified: statement.text(7))
        }
    }

    /// A stored object with these bytes: by SHA-256 name, or by any row verified against `hash`.
    /// A SHA-256 is the object's name itself (a row verified against `sha256:X` names object X),
    /// so only other algorithms look at `hash`, through an index of their rows alone: SHA-256
    /// rows, most of any cache, stay out of it (each batch rewrote that index's pages too; see
    /// docs/ARCHITECTURE.md, "Measurements behind the code"). Schema 3: an older cache's index of every row is
    /// remade so by the first run that writes (an older worker then refuses the cache, naming
    /// its schema, rather than scanning every row for each new entry without an index it can use).
    public func storedObject(for hash: ContentHash) throws(CacheError) -> (object: String, size: Int64)? {
        try wrap {
            if hash.algorithm == .sha256 {
                let byName = try database.prepare("SELECT size FROM entries WHERE object = ? LIMIT 1")
                byName.bind([.text(hash.hex)])
                return try byName.step() ? (hash.hex, byName.int(0)) : nil
            }
            let byHash = try database.prepare(
                "SELECT object, size FROM entries WHERE hash = ? AND substr(hash, 1, 7) <> 'sha256:' LIMIT 1")
            byHash.bind([.text(hash.description)])
            guard try byHash.step(), let object = byHash.text(0), Hex.isLowercaseHex(object, length: 64) else { return nil }
            return (object, byHash.int(1))
        }
    }

    /// Whether a failure is pending for `url`.
    func hasFailure(url: String) throws(CacheError) -> Bool {
        try wrap {
            let statement = try database.prepare("SELECT 1 FROM failures WHERE url = ?")
            statement.bind([.text(key(url))])
            return try statement.step()
        }
    }

    /// How many rows name `object`.
    public func references(object: String) throws(CacheError) -> Int {
        try wrap {
            let statement = try database.prepare("SELECT count(*) FROM entries WHERE object = ?")
            statement.bind([.text(object)])
            _ = try statement.step()
            return Int(statement.int(0))
        }
    }
}
