/// Diffs manifests against the index: which entries are unchanged, need a download, or can reuse
/// content already stored under another URL; and which index rows no manifest names.
public struct Planner {
    /// Tells whether an object file is present; checked once per distinct object.
    public var objectExists: (String) -> Bool

    public init(objectExists: @escaping (String) -> Bool) {
        self.objectExists = objectExists
    }

    public func plan(_ manifests: ManifestSet, records: [IndexRecord]) -> SyncPlan {
        var byURL: [String: IndexRecord] = [:]
        byURL.reserveCapacity(records.count)
        /// Normalized manifest hash → object, from every row verified against a hash.
        var objectByHash: [String: (object: String, size: Int64)] = [:]
        var sizeByObject: [String: Int64] = [:]
        for record in records {
            byURL[record.url] = record
            sizeByObject[record.object] = record.size
            if let hash = record.hash { objectByHash[hash] = (record.object, record.size) }
        }
        var presence: [String: Bool] = [:]
        func present(_ object: String) -> Bool {
            if let known = presence[object] { return known }
            let exists = objectExists(object)
            presence[object] = exists
            return exists
        }

        var items: [PlannedEntry] = []
        items.reserveCapacity(manifests.entries.count)
        var named = Set<String>()
        named.reserveCapacity(manifests.entries.count)
        for entry in manifests.entries {
            named.insert(entry.url)
            let previous = byURL[entry.url]
            if let previous, Self.isSameVersion(entry, previous), present(previous.object) {
                items.append(PlannedEntry(entry: entry, action: .keep, previous: previous))
                continue
            }
            if let stored = reusable(entry.hash, objectByHash: objectByHash, sizeByObject: sizeByObject),
               present(stored.object) {
                items.append(PlannedEntry(entry: entry, action: .reuse(object: stored.object, size: stored.size),
                                          previous: previous))
                continue
            }
            items.append(PlannedEntry(entry: entry, action: .download, previous: previous))
        }
        let orphans = records.filter { !named.contains($0.url) }
        return SyncPlan(manifests: manifests, items: items, orphans: orphans, indexedEntries: records.count)
    }

    /// The row holds the version the manifest asks for. A hashless entry is satisfied by any version.
    static func isSameVersion(_ entry: ManifestEntry, _ record: IndexRecord) -> Bool {
        guard let hash = entry.hash else { return true }
        if record.hash == hash.description { return true }
        return hash.algorithm == .sha256 && record.object == hash.hex
    }

    private func reusable(
        _ hash: ContentHash?,
        objectByHash: [String: (object: String, size: Int64)],
        sizeByObject: [String: Int64]
    ) -> (object: String, size: Int64)? {
        guard let hash else { return nil }
        if hash.algorithm == .sha256, let size = sizeByObject[hash.hex] { return (hash.hex, size) }
        return objectByHash[hash.description]
    }
}
