import Glibc
import Synchronization
import WorkerManifest

/// The index's rows as a run holds them while it plans and syncs: one fixed-size value per row
/// (the object's 32 bytes, the size, the times, where its text is) and one byte buffer for every
/// row's text, with a table from URL to row. A row as `IndexRecord` (three or more strings) costs
/// ~450 bytes and four allocations; here ~80 bytes plus its URL's, and a million rows are read
/// without a string each. `IndexRow` reads one row's fields; `IndexRecord`s are made only for
/// the rows a caller asks for.
public struct IndexRows: RandomAccessCollection, ExpressibleByArrayLiteral, Sendable {
    /// One row's fixed part.
    struct Fixed {
        var object: ObjectName
        var size: Int64
        var fetchedAt: Double
        var lastUsed: Double
        /// Where the row's text starts in `text`: its URL, then its hash (unless it is the object's
        /// SHA-256, or none), its ETag and its Last-Modified (when read).
        var start: Int
        var urlCount: UInt32
        var hashCount: UInt16
        var etagCount: UInt16
        var lastModifiedCount: UInt16
        var flags: Flags
    }

    struct Flags: OptionSet {
        let rawValue: UInt8
        static let isPrivate = Flags(rawValue: 1)
        static let hasHash = Flags(rawValue: 2)
        /// The hash is `sha256:` + the object's name (not stored).
        static let hashIsObject = Flags(rawValue: 4)
        static let hasETag = Flags(rawValue: 8)
        static let hasLastModified = Flags(rawValue: 16)
    }

    /// Never changed once built (but for the URL table, made under its lock): rows share it as
    /// they are handed around.
    final class Storage: Sendable {
        let fixed: [Fixed]
        let text: [UInt8]
        /// The rows are the index's in its key order (`IndexRows.inKeyOrder`).
        let inKeyOrder: Bool
        /// URL → row: made as rows are added when they are checked for duplicates, else on the
        /// first lookup (a plan that meets the rows in their order never makes it).
        let positions: Mutex<URLPositions?>

        init(fixed: [Fixed] = [], text: [UInt8] = [], inKeyOrder: Bool = false, positions: URLPositions? = nil) {
            self.fixed = fixed
            self.text = text
            self.inKeyOrder = inKeyOrder
            self.positions = Mutex(positions)
        }

        /// The row of the URL whose bytes are `url`.
        func find(_ url: UnsafeRawBufferPointer) -> Int? {
            positions.withLock { table in
                if table == nil {
                    var made = URLPositions()
                    made.reserve(fixed.count)
                    for position in fixed.indices {
                        _ = IndexRow(storage: self, position: position).withURL { made.insertIfAbsent($0, at: position) { _ in false } }
                    }
                    table = made
                }
                return table!.find(url) { IndexRow(storage: self, position: $0).hasURL(url) }
            }
        }
    }

    let storage: Storage

    /// No rows.
    public init() {
        storage = Storage()
    }

    /// Rows made from records (tests, and callers that have records already).
    public init(_ records: some Sequence<IndexRecord>) {
        var builder = Builder()
        for record in records { builder.append(record) }
        self = builder.rows
    }

    public init(arrayLiteral records: IndexRecord...) {
        self.init(records)
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { storage.fixed.count }

    /// The row as a record (its strings made now).
    public subscript(position: Int) -> IndexRecord { row(position).record }

    /// Whether the rows are the index's in its key order, none left out but damaged rows (which
    /// reads skip): rows side by side here have no other readable row between them in the index
    /// (when they were read).
    public var inKeyOrder: Bool { storage.inKeyOrder }

    /// The row at `position`, read field by field.
    public func row(_ position: Int) -> IndexRow { IndexRow(storage: storage, position: position) }

    /// The row of `url` (the index's key), if there is one.
    public func find(_ url: String) -> Int? {
        var url = url
        return url.withUTF8 { find(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// The row of the URL whose UTF-8 bytes are `url`, if there is one.
    public func find(bytes url: UnsafeRawBufferPointer) -> Int? {
        storage.find(url)
    }

    /// Builds rows one at a time (from the index, or from records).
    public struct Builder {
        private var fixed: [Fixed] = []
        private var text: [UInt8] = []
        private let inKeyOrder: Bool
        /// URL → row as rows are added, when they are checked for duplicates.
        private var positions: URLPositions?

        /// Whether a URL the rows hold already is skipped as rows are added (the URL table is then
        /// made as they come); the index's rows need not be checked (the URL is its key).
        /// `inKeyOrder`: the rows will be given in the index's key order, every row between two
        /// of them given too (`IndexRows.inKeyOrder`).
        public init(checksDuplicates: Bool = true, inKeyOrder: Bool = false) {
            self.inKeyOrder = inKeyOrder
            if checksDuplicates { positions = URLPositions() }
        }

        /// A row from its columns as the index holds them: the URL's and texts' bytes are copied.
        /// A URL the rows hold already is skipped (the index's key is unique). A hash, ETag or
        /// Last-Modified longer than 64 KiB is not kept (no stored hash is; the row is then
        /// checked by its object's name, or fetched unconditionally).
        mutating func append(
            url: some Collection<UInt8>, hash: (some Collection<UInt8>)?, object: ObjectName, size: Int64,
            fetchedAt: Double, lastUsed: Double, etag: (some Collection<UInt8>)?,
            lastModified: (some Collection<UInt8>)?, isPrivate: Bool
        ) {
            let position = fixed.count
            let start = text.count
            text.append(contentsOf: url)
            let urlCount = text.count - start
            // The URL is looked up as it lies in the buffer, and taken back when it is there already.
            if var table = positions.take() {
                let known = text.withUnsafeBytes { text in
                    let url = UnsafeRawBufferPointer(rebasing: text[start...])
                    return table.insertIfAbsent(url, at: position) { row in
                        let other = fixed[row]
                        return Int(other.urlCount) == url.count
                            && (url.isEmpty || memcmp(text.baseAddress! + other.start, url.baseAddress!, url.count) == 0)
                    }
                }
                positions = table
                guard known == nil else { return text.removeLast(urlCount) }
            }
            var flags: Flags = isPrivate ? [.isPrivate] : []
            let hashStart = text.count
            let hashCount = appendText(hash)
            if let hashCount {
                flags.insert(.hasHash)
                let isObject =
                    hashCount == 71
                    && text.withUnsafeBytes { text in
                        text[hashStart...].starts(with: Self.sha256Prefix)
                            && object.isSpelled(by: UnsafeRawBufferPointer(rebasing: text[(hashStart + 7)...]))
                    }
                if isObject {
                    flags.insert(.hashIsObject)
                    text.removeLast(hashCount)
                }
            }
            let etagCount = appendText(etag)
            if etagCount != nil { flags.insert(.hasETag) }
            let lastModifiedCount = appendText(lastModified)
            if lastModifiedCount != nil { flags.insert(.hasLastModified) }
            fixed.append(
                Fixed(
                    object: object, size: size, fetchedAt: fetchedAt, lastUsed: lastUsed, start: start,
                    urlCount: UInt32(urlCount), hashCount: flags.contains(.hashIsObject) ? 0 : UInt16(hashCount ?? 0),
                    etagCount: UInt16(etagCount ?? 0), lastModifiedCount: UInt16(lastModifiedCount ?? 0),
                    flags: flags))
        }

        /// Appends `text` to the buffer; its length, or nil (nothing kept) without one or when it
        /// is longer than a row's 16-bit count.
        private mutating func appendText(_ more: (some Collection<UInt8>)?) -> Int? {
            guard let more, more.count <= Int(UInt16.max) else { return nil }
            text.append(contentsOf: more)
            return more.count
        }

        /// A row from a record (skipped when its object is not a SHA-256 name: never a path).
        public mutating func append(_ record: IndexRecord) {
            guard let object = ObjectName(hex: record.object) else { return }
            append(
                url: record.url.utf8, hash: record.hash?.utf8, object: object, size: record.size, fetchedAt: record.fetchedAt,
                lastUsed: record.lastUsed, etag: record.etag?.utf8, lastModified: record.lastModified?.utf8,
                isPrivate: record.isPrivate)
        }

        /// Makes room for about `rows` rows and `textBytes` of their texts at once: grown by
        /// doubling, a million rows' buffers were copied on the way (~240 MB moved, ~60k page
        /// faults). Pages reserved and never written cost nothing.
        mutating func reserve(rows: Int, textBytes: Int) {
            fixed.reserveCapacity(rows)
            text.reserveCapacity(textBytes)
        }

        /// The rows built so far (the builder is not to be used after).
        public var rows: IndexRows {
            IndexRows(storage: Storage(fixed: fixed, text: text, inKeyOrder: inKeyOrder, positions: positions))
        }

        private static let sha256Prefix = Array("sha256:".utf8)
    }

    private init(storage: Storage) {
        self.storage = storage
    }
}

/// One index row, read field by field without making the others.
public struct IndexRow: Sendable {
    let storage: IndexRows.Storage
    /// Its place in the rows it was read from.
    public let position: Int

    private var fixed: IndexRows.Fixed { storage.fixed[position] }

    public var size: Int64 { fixed.size }
    public var fetchedAt: Double { fixed.fetchedAt }
    public var lastUsed: Double { fixed.lastUsed }
    public var isPrivate: Bool { fixed.flags.contains(.isPrivate) }
    /// The object's name (SHA-256 of the stored bytes) as 32 bytes.
    public var objectName: ObjectName { fixed.object }
    /// The object's name as 64 hex digits.
    public var object: String { fixed.object.hex }

    public var url: String { withURL { String(decoding: $0, as: UTF8.self) } }

    /// The manifest hash the row was verified against (normalized), nil for a hashless entry.
    public var hash: String? {
        let fixed = fixed
        guard fixed.flags.contains(.hasHash) else { return nil }
        if fixed.flags.contains(.hashIsObject) { return "sha256:" + fixed.object.hex }
        return text(at: fixed.start + Int(fixed.urlCount), count: Int(fixed.hashCount))
    }

    public var etag: String? {
        let fixed = fixed
        guard fixed.flags.contains(.hasETag) else { return nil }
        return text(at: fixed.start + Int(fixed.urlCount) + Int(fixed.hashCount), count: Int(fixed.etagCount))
    }

    public var lastModified: String? {
        let fixed = fixed
        guard fixed.flags.contains(.hasLastModified) else { return nil }
        return text(
            at: fixed.start + Int(fixed.urlCount) + Int(fixed.hashCount) + Int(fixed.etagCount),
            count: Int(fixed.lastModifiedCount))
    }

    /// The row as a record.
    public var record: IndexRecord {
        IndexRecord(
            url: url, hash: hash, object: object, size: size, fetchedAt: fetchedAt, lastUsed: lastUsed,
            etag: etag, lastModified: lastModified, isPrivate: isPrivate)
    }

    /// Whether this row was read from `rows` (not from other rows that have a row at its place).
    func isOne(of rows: IndexRows) -> Bool {
        storage === rows.storage
    }

    /// Whether the row's URL is the one whose UTF-8 bytes are `url`.
    public func hasURL(_ url: UnsafeRawBufferPointer) -> Bool {
        withURL { own in own.count == url.count && (url.isEmpty || memcmp(own.baseAddress!, url.baseAddress!, url.count) == 0) }
    }

    /// Calls `body` with the URL's UTF-8 bytes, in place.
    func withURL<T>(_ body: (UnsafeRawBufferPointer) -> T) -> T {
        let fixed = fixed
        return storage.text.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[fixed.start..<fixed.start + Int(fixed.urlCount)])) }
    }

    private func text(at start: Int, count: Int) -> String {
        storage.text.withUnsafeBytes { String(decoding: $0[start..<start + count], as: UTF8.self) }
    }
}
