/// Diffs manifests against the index: which entries are unchanged, need a download, or can reuse
/// content already stored under another URL; and which index rows no manifest names.
public struct Planner {
    /// Tells whether an object file is present; checked once per distinct object.
    public var objectExists: (String) -> Bool

    public init(objectExists: @escaping (String) -> Bool) {
        self.objectExists = objectExists
    }

    public func plan(_ manifests: ManifestSet, records: [IndexRecord]) -> SyncPlan {
        var rowByURL: [String: Int32] = [:]
        rowByURL.reserveCapacity(records.count)
        /// Normalized manifest hash → object, from every row verified against a hash.
        var objectByHash: [String: (object: String, size: Int64)] = [:]
        var sizeByObject: [String: Int64] = [:]
        for (row, record) in records.enumerated() {
            rowByURL[record.url] = Int32(row)
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

        var actions: [PlannedEntry.Action] = []
        var previousRows: [Int32] = []
        actions.reserveCapacity(manifests.entries.count)
        previousRows.reserveCapacity(manifests.entries.count)
        for entry in manifests.entries {
            let row = records.isEmpty ? nil : rowByURL[entry.url]
            previousRows.append(row ?? -1)
            if let row, Self.isSameVersion(entry, records[Int(row)]), present(records[Int(row)].object) {
                actions.append(.keep)
            } else if !records.isEmpty,
                      let stored = reusable(entry.hash, objectByHash: objectByHash, sizeByObject: sizeByObject),
                      present(stored.object) {
                actions.append(.reuse(object: stored.object, size: stored.size))
            } else {
                actions.append(.download)
            }
        }
        let orphans = records.filter { !manifests.contains(url: $0.url) }
        return SyncPlan(manifests: manifests, records: records, actions: actions, previousRows: previousRows, orphans: orphans)
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
