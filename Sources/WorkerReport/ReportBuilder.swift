import WorkerPlan

/// A run's totals and report rows, kept by one rule for `sync` and `plan`: a failed entry is
/// always listed; other entries while the list has room (`listLimit`; nil is no limit), and
/// unchanged ones only when asked for (`reportAll`). Rows come out in manifest order, whatever
/// order the downloads finished in.
package struct ReportBuilder {
    package var totals = SyncReport.Totals()
    private let listLimit: Int
    private let reportAll: Bool
    private var rows: [(order: Int, entry: SyncReport.Entry)] = []
    private var listed = 0

    package init(listLimit: Int?, reportAll: Bool) {
        self.listLimit = listLimit ?? .max
        self.reportAll = reportAll
    }

    /// Whether a row of this status would be listed now.
    func lists(_ status: EntryStatus) -> Bool {
        switch status {
        case .failed: true
        case .unchanged: reportAll && listed < listLimit
        default: listed < listLimit
        }
    }

    /// Counts an entry, and lists its row when the rule keeps it. `order` places the row (the
    /// plan item's number); the row is built only when listed: without a report file, a cold
    /// sync of a million entries builds none.
    package mutating func add(_ status: EntryStatus, order: Int, row: () -> SyncReport.Entry) {
        totals.count(status)
        guard lists(status) else { return }
        if status != .failed { listed += 1 }
        rows.append((order, row()))
    }

    /// Takes back an entry counted as `status` (its row, if listed): it is about to be counted
    /// again with another. Rows recorded lately are at the end, where the search starts.
    package mutating func retract(_ status: EntryStatus, order: Int) {
        totals.uncount(status)
        guard let index = rows.lastIndex(where: { $0.order == order && $0.entry.status == status }) else { return }
        rows.remove(at: index)
        if status != .failed { listed -= 1 }
    }

    /// The listed rows, in order.
    package var entries: [SyncReport.Entry] {
        rows.sorted { $0.order < $1.order }.map(\.entry)
    }
}
