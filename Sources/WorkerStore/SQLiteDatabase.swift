import CSQLite
import FoundationEssentials
import Glibc

/// An error from SQLite, with the statement's purpose for context.
public struct SQLiteError: Error, CustomStringConvertible, Sendable {
    public let code: Int32
    public let message: String
    public var description: String { "SQLite error \(code): \(message)" }

    /// A refusal that comes from permissions or a read-only file system (the primary code:
    /// read-only, cannot open, permission, authorization).
    var isAccessDenied: Bool {
        [SQLITE_READONLY, SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_AUTH].contains(code & 0xff)
    }

    /// Another connection holds the file (or, read as immutable, changed it under the read).
    public var isBusy: Bool {
        [SQLITE_BUSY, SQLITE_LOCKED].contains(code & 0xff)
    }

    /// The disk (or the file system's quota) has no room for what the statement writes.
    var isFull: Bool {
        code & 0xff == SQLITE_FULL
    }

    /// The file is damaged (a malformed page, not a database): only starting over helps.
    public var isCorrupt: Bool {
        [SQLITE_CORRUPT, SQLITE_NOTADB].contains(code & 0xff)
    }

    public init(code: Int32, message: String) {
        self.code = code
        self.message = message
    }
}

/// A thin, single-threaded wrapper over one sqlite3 connection. Every use stays on one task.
final class SQLiteDatabase {
    private var handle: OpaquePointer?

    /// Opens `path`; with `immutable`, read-only as a file nothing changes (SQLite's `immutable=1`:
    /// no locks, no WAL or shared-memory file), for a cache on a read-only file system.
    init(path: String, create: Bool, readOnly: Bool = false, immutable: Bool = false) throws(SQLiteError) {
        let flags =
            (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0))
            | SQLITE_OPEN_NOMUTEX | (immutable ? SQLITE_OPEN_URI : 0)
        let name = immutable ? "file:" + Self.uriPath(path) + "?immutable=1" : path
        let status = sqlite3_open_v2(name, &handle, flags, nil)
        guard status == SQLITE_OK else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            sqlite3_close(handle)
            handle = nil
            throw SQLiteError(code: status, message: message)
        }
        sqlite3_busy_timeout(handle, 10_000)
    }

    deinit {
        sqlite3_close_v2(handle)
    }

    /// Whether the connection is to a database in memory (no file).
    var isInMemory: Bool {
        guard let name = sqlite3_db_filename(handle, "main") else { return true }
        return name.pointee == 0
    }

    /// How long a statement waits for another connection's write lock before SQLITE_BUSY.
    func setBusyTimeout(milliseconds: Int32) {
        sqlite3_busy_timeout(handle, milliseconds)
    }

    /// Keeps the WAL and shared-memory files when the last connection closes (SQLite's
    /// `SQLITE_FCNTL_PERSIST_WAL`): a reader that may not create files in the cache (another
    /// user's, read-only) can open a WAL database only while both exist.
    func keepWALFiles() {
        var on: Int32 = 1
        _ = sqlite3_file_control(handle, "main", SQLITE_FCNTL_PERSIST_WAL, &on)
    }

    /// `path` for a `file:` URI: `%`, `?` and `#` escaped.
    private static func uriPath(_ path: String) -> String {
        var escaped = ""
        for character in path {
            switch character {
            case "%": escaped += "%25"
            case "?": escaped += "%3f"
            case "#": escaped += "%23"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    func execute(_ sql: String) throws(SQLiteError) {
        var error: UnsafeMutablePointer<CChar>?
        let status = sqlite3_exec(handle, sql, nil, nil, &error)
        guard status == SQLITE_OK else {
            let message = error.map { String(cString: $0) } ?? "unknown"
            sqlite3_free(error)
            throw SQLiteError(code: status, message: message)
        }
    }

    func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard status == SQLITE_OK, let statement else { throw lastError(status) }
        return SQLiteStatement(statement: statement, database: self)
    }

    func lastError(_ status: Int32) -> SQLiteError {
        SQLiteError(code: status, message: String(cString: sqlite3_errmsg(handle)))
    }

    /// Runs `body` in one transaction; rolls back when it throws.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }
}

/// A prepared statement; bind with 1-based indexes, step, read columns with 0-based indexes.
final class SQLiteStatement {
    private let statement: OpaquePointer
    private let database: SQLiteDatabase

    fileprivate init(statement: OpaquePointer, database: SQLiteDatabase) {
        self.statement = statement
        self.database = database
    }

    deinit {
        sqlite3_finalize(statement)
    }

    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    func bind(_ values: [SQLiteValue]) {
        sqlite3_reset(statement)
        sqlite3_clear_bindings(statement)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            switch value {
            case .null: sqlite3_bind_null(statement, index)
            case .int(let number): sqlite3_bind_int64(statement, index, number)
            case .double(let number): sqlite3_bind_double(statement, index, number)
            case .text(let text): bindText(index, text)
            case .blob(let bytes): sqlite3_bind_blob(statement, index, bytes, Int32(bytes.count), Self.transient)
            }
        }
    }

    /// Binds and runs a statement that returns no rows, its values bound by `bind` one by one:
    /// for the statements run once a row (no array of values built per row).
    func run(binding bind: (SQLiteStatement) -> Void) throws(SQLiteError) {
        sqlite3_reset(statement)
        bind(self)
        while try step() {}
    }

    func bind(_ index: Int32, _ text: String?) {
        guard let text else {
            sqlite3_bind_null(statement, index)
            return
        }
        bindText(index, text)
    }

    /// A text bound from the string's own bytes: passing a `String` to the C function directly
    /// copies it into a new array first, an allocation per value bound.
    private func bindText(_ index: Int32, _ text: String) {
        _ = text.withCString { sqlite3_bind_text(statement, index, $0, -1, Self.transient) }
    }

    func bind(_ index: Int32, _ number: Int64) {
        sqlite3_bind_int64(statement, index, number)
    }

    func bind(_ index: Int32, _ number: Double) {
        sqlite3_bind_double(statement, index, number)
    }

    /// Advances; true while a row is available.
    func step() throws(SQLiteError) -> Bool {
        let status = sqlite3_step(statement)
        switch status {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw database.lastError(status)
        }
    }

    /// Binds and runs a statement that returns no rows.
    func run(_ values: [SQLiteValue]) throws(SQLiteError) {
        bind(values)
        while try step() {}
    }

    func text(_ column: Int32) -> String? {
        guard let pointer = sqlite3_column_text(statement, column) else { return nil }
        return String(cString: pointer)
    }

    /// A text column that is valid UTF-8 without a NUL, or nil (a damaged value).
    func validText(_ column: Int32) -> String? {
        guard let pointer = sqlite3_column_text(statement, column),
            strlen(pointer) == Int(sqlite3_column_bytes(statement, column))
        else { return nil }
        return pointer.withMemoryRebound(to: CChar.self, capacity: 1) { String(validatingCString: $0) }
    }

    /// A text column's bytes in place (nil when it is NULL): SQLite keeps them until the
    /// statement steps, is reset or finalized, so they are read before the next `step()`.
    func textBytes(_ column: Int32) -> UnsafeRawBufferPointer? {
        guard let pointer = sqlite3_column_text(statement, column) else { return nil }
        return UnsafeRawBufferPointer(start: pointer, count: Int(sqlite3_column_bytes(statement, column)))
    }

    /// `textBytes` of a column that is valid UTF-8 without a NUL (else nil: a damaged value, as
    /// `validText` says).
    func validTextBytes(_ column: Int32) -> UnsafeRawBufferPointer? {
        guard let bytes = textBytes(column), !bytes.contains(0) else { return nil }
        // ASCII (every URL the index keys) is valid as it is; anything else is checked whole.
        guard bytes.allSatisfy({ $0 < 0x80 }) || String(validating: bytes, as: UTF8.self) != nil else { return nil }
        return bytes
    }

    /// A column's bytes as stored (a text column's too, whatever they hold).
    func bytes(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(statement, column))
        guard count > 0, let pointer = sqlite3_column_blob(statement, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    func int(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }
    func double(_ column: Int32) -> Double { sqlite3_column_double(statement, column) }
    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(statement, column) == SQLITE_NULL }
}

enum SQLiteValue {
    case null
    case int(Int64)
    case double(Double)
    case text(String)
    case blob([UInt8])

    init(_ text: String?) { self = text.map { .text($0) } ?? .null }
}
