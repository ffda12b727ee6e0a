import WorkerManifest
import WorkerStore
import WorkerSupport

/// Diffs manifests against the index: which entries are unchanged, need a download, or can reuse
/// content already stored under another URL; and which index rows no manifest names.
public struct Planner {
    /// Tells whether an object file is present; checked once per distinct object.
    public var objectExists: (String) -> Bool
    /// Finds stored content by hash (the index answers this with its own lookups); nil: scan the
    /// records given to `plan`.
    public var storedObject: ((ContentHash) -> (object: String, size: Int64)?)?
    /// Plan a conditional request for every cached entry without a hash.
    public var revalidate = false
    /// Download every entry again, whatever the index says (SDWebImage's RefreshCached).
    public var refresh = false
    /// Download every entry without a hash again (a cache whose rows this run cannot vouch for).
    public var refreshUnpinned = false
    /// Only rows of this shard can be orphans (the other shards' rows belong to other workers).
    public var shard = Shard.all
    /// URLs that are never orphans (remote manifests and their signatures, kept for their ETags).
    public var kept: Set<String> = []
    /// The size of an object file (nil: absent), checked once per object: with it, a row whose
    /// object is there but of another size (changed on disk) is fetched again (`.repair`).
    public var objectSize: ((String) -> Int64?)?
    /// The size of a row's object file (nil: absent), when sizes are checked: read ahead by row
    /// (`ObjectDirectory.preloadSizes`). Without it, rows' objects are checked as others are.
    public var rowObjectSize: ((IndexRow) -> Int64?)?
    /// How the index keys an entry's URL (`CacheIndex.key`: without user info in a shared cache).
    public var urlKey: ((String) -> String)?

    public init(
        objectExists: @escaping (String) -> Bool,
        storedObject: ((ContentHash) -> (object: String, size: Int64)?)? = nil
    ) {
        self.objectExists = objectExists
        self.storedObject = storedObject
    }

    public func plan(_ manifests: ManifestSet, records: IndexRows) -> SyncPlan {
        /// Stored content by hash, built only if some entry needs content and no lookup was given.
        var scanned: StoredContent?
        func stored(_ hash: ContentHash) -> (object: String, size: Int64)? {
            if let storedObject { return storedObject(hash) }
            if scanned == nil { scanned = StoredContent(records) }
            return scanned?.object(for: hash)
        }
        /// Objects other than the rows' own are checked once each, however many URLs share them.
        /// Keyed by 64 bits of the name; the full name is compared, so a crafted prefix collision
        /// only costs a second check.
        var presence: [UInt64: (object: String, size: Int64)] = [:]
        /// The object's size (-1: absent; 0 when only presence is checked and it is there).
        func size(_ object: String) -> Int64 {
            let key = Self.prefixKey(object)
            if let known = presence[key], known.object == object { return known.size }
            let size = objectSize.map { $0(object) ?? -1 } ?? (objectExists(object) ? 0 : -1)
            presence[key] = (object, size)
            return size
        }
        /// Present, and of the expected size when sizes are checked.
        func intact(_ object: String, _ expected: Int64) -> Bool {
            let found = size(object)
            return found >= 0 && (objectSize == nil || found == expected)
        }
        /// The row's object: present, and intact (of the row's size when sizes are checked).
        func check(_ row: IndexRow) -> (present: Bool, intact: Bool) {
            guard let rowObjectSize else {
                let object = row.object
                return (size(object) >= 0, intact(object, row.size))
            }
            let found = rowObjectSize(row)
            return (found != nil, found == row.size)
        }

        var actions = PlanActions()
        var previousRows: [Int32] = []
        actions.reserve(manifests.entries.count)
        previousRows.reserveCapacity(manifests.entries.count)
        /// Rows some entry names: the others are the orphans (no second lookup per row).
        var named = [Bool](repeating: false, count: records.count)
        let entries = manifests.entries
        /// The row after the last one found: a manifest listed in URL order (the rows' order)
        /// finds each entry's row there, with no lookup (the rows' URL table is then never made).
        var next = 0
        for position in entries.indices {
            // The entry's URL is looked up as its bytes lie (no string), unless the index keys it otherwise.
            let found =
                records.isEmpty
                ? nil
                : urlKey.map { records.find($0(entries.url(at: position))) }
                    ?? entries.withURL(at: position) { url in
                        next < records.count && records.row(next).hasURL(url) ? next : records.find(bytes: url)
                    }
            if let found { next = found + 1 }
            let row = found.map(records.row)
            let hash = entries.hash(at: position)
            previousRows.append(row.map { Int32($0.position) } ?? -1)
            if let row { named[row.position] = true }
            if refresh || refreshUnpinned && hash == nil {
                actions.append(row.map { Self.isSameVersion(hash, $0) } == true ? .refresh : .download)
                continue
            }
            if let row, Self.isSameVersion(hash, row) {
                let object = check(row)
                if object.present {
                    if object.intact {
                        actions.append(revalidate && hash == nil ? .revalidate : .keep)
                    } else {
                        actions.append(.repair)
                    }
                    continue
                }
            }
            if !records.isEmpty, let hash {
                if let content = stored(hash), intact(content.object, content.size) {
                    actions.append(.reuse(object: content.object, size: content.size))
                    continue
                }
            }
            actions.append(.download)
        }
        var orphans: [IndexRecord] = []
        for position in records.indices where !named[position] {
            let record = records[position]
            if shard.contains(record.url), !kept.contains(record.url) { orphans.append(record) }
        }
        return SyncPlan(manifests: manifests, records: records, actions: actions, previousRows: previousRows, orphans: orphans)
    }

    /// The first 16 hex digits of an object name as a number.
    static func prefixKey(_ object: String) -> UInt64 {
        var key: UInt64 = 0
        for byte in object.utf8.prefix(16) { key = key << 4 | UInt64(Hex.value(byte) ?? 0) }
        return key
    }

    /// The row holds the version the manifest asks for. A hashless entry is satisfied by any version.
    static func isSameVersion(_ hash: ContentHash?, _ row: IndexRow) -> Bool {
        isSameVersion(hash, object: row.objectName, storedHash: row.hash)
    }

    public static func isSameVersion(_ entry: ManifestEntry, _ record: IndexRecord) -> Bool {
        isSameVersion(entry.hash, object: ObjectName(hex: record.object), storedHash: record.hash)
    }

    /// The SHA-256 the object is named by, or the hash the row was verified against (read only
    /// when the first does not match).
    private static func isSameVersion(_ hash: ContentHash?, object: ObjectName?, storedHash: @autoclosure () -> String?) -> Bool {
        guard let hash else { return true }
        if let object, hash.names(object) { return true }
        return storedHash().map(hash.isDescribed(by:)) ?? false
    }
}

/// What is stored, by the hashes it was verified against: SHA-256 object names, and every
/// manifest hash an index row records.
private struct StoredContent {
    var objectByHash: [String: (object: String, size: Int64)] = [:]
    var sizeByObject: [String: Int64] = [:]

    init(_ records: IndexRows) {
        for record in records {
            sizeByObject[record.object] = record.size
            if let hash = record.hash { objectByHash[hash] = (record.object, record.size) }
        }
    }

    func object(for hash: ContentHash) -> (object: String, size: Int64)? {
        if hash.algorithm == .sha256 {
            let name = hash.hex
            if let size = sizeByObject[name] { return (name, size) }
        }
        return objectByHash[hash.description]
    }
}
