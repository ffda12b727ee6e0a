import WorkerManifest
import WorkerStore

/// The diff of a run's manifests against the index. Compact at scale: an action and a row number
/// per entry; `items` builds each `PlannedEntry` when it is read.
public struct SyncPlan: Sendable {
    public let manifests: ManifestSet
    /// The index rows when planned.
    public let records: IndexRows
    let actions: PlanActions
    /// Per entry, its row in `records`, or -1.
    let previousRows: [Int32]
    /// Index rows that no given manifest names.
    public let orphans: [IndexRecord]

    /// How many rows the index had when planned.
    public var indexedEntries: Int { records.count }

    /// One item per distinct URL, in manifest order.
    public var items: Items { Items(plan: self) }

    /// One item, made without copying the plan (`items[position]` copies it, a retain of each
    /// of its parts, for every item read).
    public func item(at position: Int) -> PlannedEntry {
        PlannedEntry(entry: manifests.entries[position], action: actions[position], previous: previous(at: position))
    }

    /// An item's action, read without making the item (its entry's strings).
    public func action(at position: Int) -> PlannedEntry.Action { actions[position] }

    /// `item(at:).isUpdate`, read without making the item.
    public func isUpdate(at position: Int) -> Bool {
        let previous = previous(at: position)
        // A URL with no row is no update: its hash is not read (a digest made per new entry).
        return PlannedEntry.isUpdate(of: previous, to: previous == nil ? nil : manifests.entries.hash(at: position))
    }

    /// An item's current row, if it has one, read without making the item.
    public func previous(at position: Int) -> IndexRow? {
        let row = previousRows[position]
        return row >= 0 ? records.row(Int(row)) : nil
    }

    public struct Items: RandomAccessCollection, Sendable {
        let plan: SyncPlan
        public var startIndex: Int { 0 }
        public var endIndex: Int { plan.actions.count }
        public subscript(position: Int) -> PlannedEntry { plan.item(at: position) }
    }
}
