import FoundationEssentials
import WorkerManifest
import WorkerSupport

/// Rows that cannot be trusted and SQLite's own check of the file, for `verify`. Part of
/// `CacheIndex` (all SQL stays in it).
extension CacheIndex {
    /// URLs of rows that cannot be trusted: an object name that is not 64 lowercase hex digits
    /// (it would be turned into a path), or a stored hash that does not parse (the row could not
    /// be verified again). Reads skip such rows; `verify` reports them and `--repair` drops them.
    public func damagedRows() throws(CacheError) -> [DamagedRow] {
        try wrap {
            let statement = try database.prepare("SELECT CAST(url AS BLOB), hash, object FROM entries")
            var rows: [DamagedRow] = []
            while try statement.step() {
                let objectIsName = statement.text(2).map { Hex.isLowercaseHex($0, length: 64) } ?? false
                let hashParses = statement.text(1).map { ContentHash.parseStored($0) != nil } ?? true
                // A URL that is not text (a NUL, bytes that are not UTF-8) can be neither fetched
                // nor named by a manifest: it is removed by its bytes.
                let key = statement.bytes(0)
                let url = key.contains(0) ? nil : String(validating: key, as: UTF8.self)
                if !objectIsName || !hashParses || url == nil {
                    rows.append(DamagedRow(url: url ?? String(decoding: key.map { $0 == 0 ? 0x3F : $0 }, as: UTF8.self), key: key))
                }
            }
            return rows
        }
    }

    /// What SQLite's own check of the file finds wrong (a damaged page, an index that disagrees
    /// with its table), or nil when it is sound.
    public func damage() throws(CacheError) -> String? {
        do {
            let statement = try database.prepare("PRAGMA quick_check(5)")
            var problems: [String] = []
            while try statement.step() { if let line = statement.text(0), line != "ok" { problems.append(line) } }
            return problems.isEmpty ? nil : problems.joined(separator: "; ")
        } catch let error where error.isCorrupt {
            return error.message
        } catch {
            throw .index(path: path, cause: error)
        }
    }

    /// An index row that cannot be trusted: its URL as it may be shown, and its key's bytes.
    public struct DamagedRow: Sendable, Equatable {
        public let url: String
        let key: [UInt8]
    }

    /// Removes damaged rows by their keys' bytes (a URL that is not valid text included).
    public func removeDamaged(_ rows: [DamagedRow]) throws(CacheError) {
        guard !rows.isEmpty else { return }
        try wrap {
            try database.transaction {
                let remove = try database.prepare("DELETE FROM entries WHERE CAST(url AS BLOB) = ?")
                for row in rows { try remove.run([.blob(row.key)]) }
            }
        }
    }
}
