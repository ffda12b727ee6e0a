import FoundationEssentials
import Glibc
import WorkerManifest
import WorkerSupport

/// The SQLite index (`index.sqlite`, WAL): url → object. All of the project's SQL lives here.
public final class CacheIndex {
    /// Used by this type's extensions only (all SQL stays in `CacheIndex`).
    let database: SQLiteDatabase
    /// The index file, named in errors.
    public let path: String
    /// Where it lives: on a network file system the index journals without WAL.
    public private(set) var fileSystem = FileSystemKind.local

    /// A stand-in for an index file no run has made the tables of yet (read-only): empty.
    public var isStandIn: Bool { database.isInMemory }

    /// Whether URL user info is kept out of the index (a group-shared cache, `CacheAccess`): rows
    /// are keyed by `CredentialFreeURL.key`.
    public let credentialFree: Bool
    /// The secret of the digests of URL user info in a group-shared cache (nil elsewhere, and for
    /// a reader who may not read it).
    let credentialKey: [UInt8]?

    /// The `private` column as a SELECT reads it: an index of schema 4 or older that this
    /// connection did not upgrade (a reader's) has none, and every row reads as not private.
    private(set) var privateColumn = "private"

    /// Whether this connection made the tables without the index of rows by object, to build it
    /// once its first run's rows are in (`buildObjectIndex`).
    public internal(set) var objectIndexDeferred = false

    /// Opens or creates the index; throws `CacheError.unusable` on a corrupt or unreadable file.
    /// A read-only connection never writes, not even the checkpoint a last connection makes; it
    /// works in a cache this user may not write (another user's, a read-only mount).
    /// `deferObjectIndex`: when this connection makes the tables (a new cache), the index of rows
    /// by object is left for `buildObjectIndex`. Kept up row by row, it was the costliest part
    /// of a new cache's first large sync (each batch's rows land all over it: a million-entry
    /// first sync took 16 % more CPU with it than without it); built once over the rows, it is a
    /// sort. Lookups by object work without it (a scan), and any connection that may change the
    /// schema builds it when it finds it missing (a first run that stopped before its end).
    public init(path: String, create: Bool, readOnly: Bool = false, deferObjectIndex: Bool = false) throws(CacheError) {
        self.path = path
        let folder = PathName.parent(path)
        credentialFree = CacheAccess.isGroupShared(folder)
        credentialKey = credentialFree ? Self.credentialKey(folder: folder, create: create && !readOnly) : nil
        if create && !readOnly { try Self.restrictPermissions(path, groupReadable: credentialFree) }
        do {
            database = try Self.connect(path, create: create && !readOnly, readOnly: readOnly)
            fileSystem = FileSystemKind.of(folder)
            if fileSystem.isNetwork {
                // WAL's shared memory is per host: a rollback journal under POSIX locks instead.
                if !readOnly { try database.execute("PRAGMA journal_mode=DELETE") }
                // EXTRA: the journal's folder is flushed once the journal is deleted (the commit);
                // under FULL a power cut can bring the journal back and undo a commit whose
                // rows' objects are gone already.
                try database.execute("PRAGMA synchronous=EXTRA")
            } else {
                if !readOnly {
                    // Kept for readers that may not create them; cut back to 16 MiB after a
                    // checkpoint, so a large first sync does not leave a large file behind. A
                    // checkpoint once the WAL holds 16,384 pages (64 MiB), not SQLite's 1,000: a
                    // batch's rows dirty pages all over the object index, so with the default
                    // nearly every commit was followed by a checkpoint that copied its pages
                    // again and synced the file; fewer checkpoints copy a page once for several
                    // commits (docs/ARCHITECTURE.md, "Measurements behind the code").
                    database.keepWALFiles()
                    try database.execute("PRAGMA journal_mode=WAL; PRAGMA journal_size_limit=16777216; PRAGMA wal_autocheckpoint=16384")
                }
                // Each commit on the disk when it returns (one fsync of the WAL a batch): what a
                // run reports as stored survives a power cut, and rows removed stay removed once
                // their objects' files go.
                try database.execute("PRAGMA synchronous=FULL")
            }
            // SQLite's default page cache is 2 MB: past ~10k rows the random inserts into the
            // object and hash indexes kept reading pages back (pread + pwrite were 12 % of a
            // 100k-file sync's consumer thread). Pages are allocated only as they are used. A
            // read-only connection keeps the default: it scans the rows once (the read-ahead, a
            // plan) or looks a few up, and a scan of a million rows would fill 64 MB for nothing.
            if !readOnly { try database.execute("PRAGMA cache_size=-\(Self.writerCacheKiB)") }
            objectIndexDeferred = try Self.prepareSchema(
                database, path: path, create: create && !readOnly,
                deferObjectIndex: deferObjectIndex)
            if try Self.hasTable(database, "entries"), try !Self.hasColumn(database, "entries", "private") { privateColumn = "0" }
        } catch let error as CacheError {
            throw error
        } catch let error as SQLiteError {
            throw Self.explain(error, path: path, readOnly: readOnly)
        } catch {
            throw CacheError.unusable(path: path, reason: "\(error)")
        }
    }

    // MARK: - Reads

    /// SQLite's data version of this connection: it changes when another connection commits.
    public func dataVersion() throws(CacheError) -> Int64 {
        try wrap {
            let statement = try database.prepare("PRAGMA data_version")
            _ = try statement.step()
            return statement.int(0)
        }
    }

    /// Every row, in one scan (cheaper than one lookup per manifest entry at scale). Validators
    /// (ETag, Last-Modified) only when asked: only revalidation uses them.
    public func allRecords(validators: Bool = true) throws(CacheError) -> [IndexRecord] {
        Array(try allRows(validators: validators))
    }

    /// Every row, as a run holds them (`IndexRows`): read without a string per row.
    public func allRows(validators: Bool = true) throws(CacheError) -> IndexRows {
        try wrap {
            // In URL order (the table's key: no sort): a plan of a manifest in that order meets
            // the rows one after another.
            let statement = try database.prepare(
                validators
                    ? "SELECT url, hash, object, size, fetched_at, last_used, etag, last_modified, \(privateColumn) FROM entries ORDER BY url"
                    : "SELECT url, hash, object, size, fetched_at, last_used, NULL, NULL, \(privateColumn) FROM entries ORDER BY url")
            var rows = IndexRows.Builder(checksDuplicates: false, inKeyOrder: true)
            // Sized from the file: a row takes at least ~256 bytes of it (URL, hash, object name,
            // numbers, its index entries), and its texts kept in memory are a part of those.
            // (At most what the manifest loader reserves for its entries.)
            let fileBytes = try databaseBytes()
            rows.reserve(rows: min(fileBytes / 256, 50_000_000), textBytes: min(fileBytes / 4, 1 << 30))
            while try statement.step() {
                // A row whose object name is not one, or whose URL is not text, is damaged: never
                // a path or a request (see `damagedRows`).
                guard let object = statement.textBytes(2).flatMap(ObjectName.init(hex:)),
                    let url = statement.validTextBytes(0)
                else { continue }
                rows.append(
                    url: url, hash: statement.textBytes(1), object: object, size: statement.int(3),
                    fetchedAt: statement.double(4), lastUsed: statement.double(5), etag: statement.textBytes(6),
                    lastModified: statement.textBytes(7), isPrivate: statement.int(8) != 0)
            }
            return rows.rows
        }
    }

    /// The database file's size by SQLite's count (pages × page size).
    private func databaseBytes() throws(SQLiteError) -> Int {
        let pages = try database.prepare("PRAGMA page_count")
        let size = try database.prepare("PRAGMA page_size")
        guard try pages.step(), try size.step() else { return 0 }
        let (bytes, overflow) = pages.int(0).multipliedReportingOverflow(by: size.int(0))
        return overflow ? Int.max : Int(clamping: max(0, bytes))
    }

    /// Gives back the connection's page cache (a run that touched a million rows need not keep
    /// the pages it will not read again).
    public func releaseMemory() throws(CacheError) {
        try wrap { try database.execute("PRAGMA shrink_memory") }
    }

    /// SQLite's journal mode (`wal`, or `delete` on a network file system).
    func journalMode() throws(CacheError) -> String {
        try wrap {
            let statement = try database.prepare("PRAGMA journal_mode")
            _ = try statement.step()
            return statement.text(0) ?? ""
        }
    }

    // MARK: - Writes

    /// Applies one batch in a single transaction. Callers make the batch's objects durable first.
    /// A URL that is stored again clears its pending failure; `failures` records new ones.
    public func apply(
        upserts: [IndexRecord], touches: [String], removals: [String], failures: [FailureRecord] = [],
        at time: Double
    ) throws(CacheError) {
        try wrap {
            try database.transaction {
                // Most runs have no failure pending: then nothing is looked up per URL.
                let anyFailure = try database.prepare("SELECT EXISTS(SELECT 1 FROM failures)")
                _ = try anyFailure.step()
                if anyFailure.int(0) != 0, !upserts.isEmpty || !removals.isEmpty {
                    let clear = try database.prepare("DELETE FROM failures WHERE url = ?")
                    for record in upserts { try clear.run([.text(key(record.url))]) }
                    for url in removals { try clear.run([.text(key(url))]) }
                }
                if anyFailure.int(0) != 0 {
                    // Failures of URLs only `get` asked for age out (the next write drops them).
                    let expired = try database.prepare("DELETE FROM failures WHERE get_only = 1 AND at < ?")
                    try expired.run([.double(time - FailureRecord.getOnlyLifetime)])
                }
                if !failures.isEmpty {
                    // A manifest's failure of a URL stays a manifest's (get_only = 0) until it clears.
                    let fail = try database.prepare(
                        """
                        INSERT INTO failures(url, reason, error, attempts, at, get_only) VALUES (?, ?, ?, ?, ?, ?)
                        ON CONFLICT(url) DO UPDATE SET reason = excluded.reason, error = excluded.error,
                            attempts = excluded.attempts, at = excluded.at,
                            get_only = min(failures.get_only, excluded.get_only)
                        """)
                    for failure in failures {
                        try fail.run([
                            .text(key(failure.url)), .text(failure.reason), .text(failure.error),
                            .int(Int64(failure.attempts)), .double(failure.at), .int(failure.getOnly ? 1 : 0),
                        ])
                    }
                }
                if !upserts.isEmpty {
                    let upsert = try database.prepare(
                        """
                        INSERT INTO entries(url, hash, object, size, fetched_at, last_used, etag, last_modified, private)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                        ON CONFLICT(url) DO UPDATE SET hash = excluded.hash, object = excluded.object,
                            size = excluded.size, fetched_at = excluded.fetched_at, last_used = excluded.last_used,
                            etag = excluded.etag, last_modified = excluded.last_modified, private = excluded.private
                        """)
                    for record in upserts {
                        try upsert.run { row in
                            row.bind(1, key(record.url))
                            row.bind(2, record.hash)
                            row.bind(3, record.object)
                            row.bind(4, record.size)
                            row.bind(5, record.fetchedAt)
                            row.bind(6, record.lastUsed)
                            row.bind(7, record.etag)
                            row.bind(8, record.lastModified)
                            row.bind(9, Int64(record.isPrivate ? 1 : 0))
                        }
                    }
                }
                if !touches.isEmpty {
                    let touch = try database.prepare("UPDATE entries SET last_used = ? WHERE url = ?")
                    for url in touches { try touch.run([.double(time), .text(key(url))]) }
                }
                if !removals.isEmpty {
                    let remove = try database.prepare("DELETE FROM entries WHERE url = ?")
                    for url in removals { try remove.run([.text(key(url))]) }
                }
            }
        }
    }

    /// Sets when entries were last used (`gc` evicts by it; tests set it to control time).
    public func setLastUsed(_ time: Double, urls: [String]) throws(CacheError) {
        try wrap {
            try database.transaction {
                let touch = try database.prepare("UPDATE entries SET last_used = ? WHERE url = ?")
                for url in urls { try touch.run([.double(time), .text(key(url))]) }
            }
        }
    }

    /// Sets "last used" of every row whose key lies in one of `ranges` (stored keys, both ends
    /// included), a statement a range: a run whose due rows lie side by side in key order
    /// refreshes them without a lookup each.
    public func touch(ranges: [(first: String, last: String)], at time: Double) throws(CacheError) {
        try wrap {
            try database.transaction {
                let touch = try database.prepare("UPDATE entries SET last_used = ? WHERE url >= ? AND url <= ?")
                for range in ranges { try touch.run([.double(time), .text(range.first), .text(range.last)]) }
            }
        }
    }

    /// Deletes every row: entries, pending failures, manifest runs.
    public func removeAll() throws(CacheError) {
        try wrap {
            try database.transaction {
                try database.execute("DELETE FROM entries; DELETE FROM failures; DELETE FROM manifest_runs; DELETE FROM origins;")
            }
        }
    }

    func wrap<T>(_ body: () throws -> T) throws(CacheError) -> T {
        do {
            return try body()
        } catch let error as CacheError {
            throw error
        } catch let error as SQLiteError {
            throw CacheError.index(path: path, cause: error)
        } catch {
            throw CacheError.unusable(path: path, reason: "\(error)")
        }
    }
}
