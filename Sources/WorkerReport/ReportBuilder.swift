import WorkerFetch
import WorkerPlan
import WorkerStore

/// A run's totals and report rows, kept by one rule for `sync` and `plan`: a failed entry is
/// always listed; other entries while the list has room (`listLimit`; nil is no limit), and
/// unchanged ones only when asked for (`reportAll`). Rows come out in manifest order, whatever
/// order the downloads finished in.
///
/// A row is kept whole, or — an entry whose row its plan item and outcome tell entirely — as the
/// few facts of its outcome (`RowFacts`), made into a row only as the report is written
/// (`entries(making:)`): a million-row report does not hold a million rows. Facts go to an
/// unlinked file in `factsDirectory` beyond a batch (`RowFactsFile`): what such a row keeps in
/// memory is its place and status (12 bytes).
public struct ReportBuilder {
    public var totals = SyncReport.Totals()
    private let listLimit: Int
    private let reportAll: Bool
    private var rows: [Row] = []
    /// Rows kept whole (failures, rows with free text), by `Row.whole`.
    private var whole: [SyncReport.Entry] = []
    /// The facts of rows not kept whole, by order.
    private let facts: RowFactsFile
    private var listed = 0

    /// One listed row: its place, its status, and where its whole row is, if it has one (12
    /// bytes: a plan has fewer than 2^31 items).
    private struct Row {
        var order: Int32
        /// Its place in `whole`, or -1 (made from its facts).
        var whole: Int32
        var status: EntryStatus
    }

    /// `factsDirectory`: where the facts of many rows are written (the cache's `tmp/`); nil keeps
    /// them in memory.
    public init(listLimit: Int?, reportAll: Bool, factsDirectory: String? = nil) {
        self.listLimit = listLimit ?? .max
        self.reportAll = reportAll
        facts = RowFactsFile(directory: factsDirectory)
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
    public mutating func add(_ status: EntryStatus, order: Int, row: () -> SyncReport.Entry) {
        guard count(status) else { return }
        whole.append(row())
        rows.append(Row(order: Int32(order), whole: Int32(whole.count - 1), status: status))
    }

    /// Counts an entry, and lists it by its facts when the rule keeps it: its row is made from
    /// them when the report is written.
    public mutating func add(_ status: EntryStatus, order: Int, facts: RowFacts) {
        guard count(status) else { return }
        rows.append(Row(order: Int32(order), whole: -1, status: status))
        self.facts.put(facts, order: order)
    }

    /// Counts `status`; whether its row is listed.
    private mutating func count(_ status: EntryStatus) -> Bool {
        totals.count(status)
        guard lists(status) else { return false }
        if status != .failed { listed += 1 }
        return true
    }

    /// The listed rows, in order: those kept whole as they are, the others made by `make` (from
    /// the row's order, status and facts) as each is read.
    public func entries(making make: @escaping @Sendable (Int, EntryStatus, RowFacts) -> SyncReport.Entry) -> ReportRows {
        var rows = rows
        if !zip(rows, rows.dropFirst()).allSatisfy({ $0.order < $1.order }) {
            rows.sort { $0.order < $1.order }
        }
        let whole = whole, sorted = rows, facts = facts
        return ReportRows(count: sorted.count, status: { sorted[$0].status }) { position in
            let row = sorted[position]
            return row.whole >= 0 ? whole[Int(row.whole)] : make(Int(row.order), row.status, facts.facts(order: Int(row.order)))
        }
    }
}
