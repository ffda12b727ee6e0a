import CWorkerSystem
import FoundationEssentials

/// The index's tables and their version (SQLite's `user_version`).
extension CacheIndex {
    /// 2 added `origins` (origins found down, probed first by the next run); 3 made the hash
    /// index hold only rows of algorithms other than SHA-256 (those are found by object name); 4
    /// marks failures of URLs only `get` or `manifest --urls` asked for (they age out); 5 added
    /// `entries.private`; 6 added `listed_objects` (what `manifest s3://` last saw of each object);
    /// 7 added `accepted_manifests` (each manifest's last accepted serial, and when it was checked);
    /// 8 added `manifest_serials` (the serial accepted per manifest name and signing key) and
    /// `manifest_documents` (the rows of remote manifests and their signatures: not entries).
    static let schemaVersion = 8

    /// Refuses an index of a newer schema; with `create`, makes the tables or brings an older
    /// index up to this schema, in one transaction, and builds the index of rows by object if it
    /// is missing — unless the tables are made now and `deferObjectIndex` leaves that to
    /// `buildObjectIndex` (then true is returned).
    static func prepareSchema(_ database: SQLiteDatabase, path: String, create: Bool, deferObjectIndex: Bool = false) throws -> Bool {
        let current = try userVersion(database)
        if current > schemaVersion {
            throw CacheError.unusable(path: path, reason: "index schema \(current) is newer than this worker (\(Self.schemaVersion))")
        }
        guard create else { return false }
        // A current schema is left alone: the script below would write (user_version),
        // and a write moves the data version other connections compare (`CachePrefetch`).
        guard current < schemaVersion else {
            // Only lookups by object use it, and they scan without it: a disk too full to build
            // it leaves it to the next writer instead of stopping this one.
            if try !hasIndex(database, "entries_object") { try? database.execute(objectIndex) }
            return false
        }
        let deferred = try deferObjectIndex && !hasTable(database, "entries")
        // Schemas 2–3 had `failures` without `get_only`: it is added in the same transaction.
        let addGetOnly =
            try hasTable(database, "failures") && !hasColumn(database, "failures", "get_only")
            ? "ALTER TABLE failures ADD COLUMN get_only INTEGER NOT NULL DEFAULT 0;" : ""
        // Schemas 1–4 had `entries` without `private` (rows fetched with credentials).
        let addPrivate =
            try hasTable(database, "entries") && !hasColumn(database, "entries", "private")
            ? "ALTER TABLE entries ADD COLUMN private INTEGER NOT NULL DEFAULT 0;" : ""
        // One transaction: each statement on its own was a commit of its own (seven).
        try database.execute(
            """
            BEGIN IMMEDIATE;
            CREATE TABLE IF NOT EXISTS entries(
                url TEXT PRIMARY KEY NOT NULL,
                hash TEXT,
                object TEXT NOT NULL,
                size INTEGER NOT NULL,
                fetched_at REAL NOT NULL,
                last_used REAL NOT NULL,
                etag TEXT,
                last_modified TEXT,
                private INTEGER NOT NULL DEFAULT 0
            ) WITHOUT ROWID;
            \(addPrivate)
            \(deferred ? "" : objectIndex)
            DROP INDEX IF EXISTS entries_hash;
            CREATE INDEX entries_hash ON entries(hash) WHERE substr(hash, 1, 7) <> 'sha256:';
            CREATE TABLE IF NOT EXISTS failures(
                url TEXT PRIMARY KEY NOT NULL,
                reason TEXT NOT NULL,
                error TEXT NOT NULL,
                attempts INTEGER NOT NULL,
                at REAL NOT NULL,
                get_only INTEGER NOT NULL DEFAULT 0
            ) WITHOUT ROWID;
            \(addGetOnly)
            CREATE TABLE IF NOT EXISTS origins(
                origin TEXT PRIMARY KEY NOT NULL,
                since REAL NOT NULL,
                problem TEXT NOT NULL,
                checked REAL NOT NULL
            ) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS listed_objects(
                url TEXT PRIMARY KEY NOT NULL,
                etag TEXT NOT NULL,
                size INTEGER NOT NULL,
                last_modified TEXT NOT NULL,
                sha256 TEXT NOT NULL
            ) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS accepted_manifests(
                source TEXT PRIMARY KEY NOT NULL,
                serial INTEGER,
                object TEXT NOT NULL,
                accepted_at REAL NOT NULL,
                checked_at REAL NOT NULL
            ) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS manifest_serials(
                identity TEXT NOT NULL,
                signer TEXT NOT NULL,
                serial INTEGER NOT NULL,
                object TEXT NOT NULL,
                PRIMARY KEY(identity, signer)
            ) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS manifest_documents(
                url TEXT PRIMARY KEY NOT NULL
            ) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS manifest_runs(
                path TEXT PRIMARY KEY NOT NULL,
                name TEXT NOT NULL,
                entries INTEGER NOT NULL,
                finished_at REAL NOT NULL,
                failed INTEGER NOT NULL
            );
            PRAGMA user_version = \(Self.schemaVersion);
            COMMIT;
            """)
        return deferred
    }

    /// A writer's page cache (KiB), and the smaller one an index build sorts within.
    static let writerCacheKiB = 65536
    static let buildCacheKiB = 16384

    /// Builds the index of rows by object that this connection left out when it made the tables
    /// (`deferObjectIndex`); nothing when it did not. Call holding the cache's lock.
    public func buildObjectIndex() throws(CacheError) {
        guard objectIndexDeferred else { return }
        // The build sorts every row's object name in memory up to the page cache's size, then
        // in temporary files: the page cache is given back (to the system too: the allocator
        // keeps freed pages otherwise) and made smaller for it, so a run's peak memory does not
        // grow at its end (1M entries: 284 -> 364 MB with the writer's cache, 300 with a 16 MiB
        // one).
        try wrap {
            try database.execute("PRAGMA shrink_memory; PRAGMA cache_size=-\(Self.buildCacheKiB)")
            worker_release_free_memory()
            defer { try? database.execute("PRAGMA cache_size=-\(Self.writerCacheKiB)") }
            try database.execute(Self.objectIndex)
        }
        objectIndexDeferred = false
    }

    /// The index of rows by object (which rows name an object: reuse by content, removal).
    static let objectIndex = "CREATE INDEX IF NOT EXISTS entries_object ON entries(object);"

    static func hasIndex(_ database: SQLiteDatabase, _ index: String) throws(SQLiteError) -> Bool {
        try hasSchemaObject(database, type: "index", index)
    }

    /// The schema version, read by a statement that is finalized on return (the schema script
    /// drops an index, which SQLite refuses while a statement of the connection is open).
    private static func userVersion(_ database: SQLiteDatabase) throws(SQLiteError) -> Int64 {
        let version = try database.prepare("PRAGMA user_version")
        _ = try version.step()
        return version.int(0)
    }

    static func hasTable(_ database: SQLiteDatabase, _ table: String) throws(SQLiteError) -> Bool {
        try hasSchemaObject(database, type: "table", table)
    }

    private static func hasSchemaObject(_ database: SQLiteDatabase, type: String, _ name: String) throws(SQLiteError) -> Bool {
        let statement = try database.prepare("SELECT 1 FROM sqlite_master WHERE type = '\(type)' AND name = '\(name)'")
        return try statement.step()
    }

    static func hasColumn(_ database: SQLiteDatabase, _ table: String, _ column: String) throws(SQLiteError) -> Bool {
        let statement = try database.prepare("SELECT 1 FROM pragma_table_info('\(table)') WHERE name = '\(column)'")
        return try statement.step()
    }
}
