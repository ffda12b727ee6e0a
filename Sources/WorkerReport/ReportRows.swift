import WorkerPlan

/// A report's rows, in manifest order. Either given whole (a decoded or hand-made report), or
/// made one at a time as a writer reads them from what the run kept of each (`ReportBuilder`'s
/// compact rows: a million-entry report is written without a million `Entry` values in memory).
/// Each row's status is known without making the row, so a writer that lists only some statuses
/// makes only those rows (`with(_:)`).
public struct ReportRows: RandomAccessCollection, ExpressibleByArrayLiteral, Equatable, Sendable {
    private let positions: [Int]?
    private let count_: Int
    private let statusAt: @Sendable (Int) -> EntryStatus
    private let make: @Sendable (Int) -> SyncReport.Entry

    /// Rows made on demand: `make(position)` for each position below `count`, whose status is
    /// `status(position)`.
    public init(count: Int, status: @escaping @Sendable (Int) -> EntryStatus, make: @escaping @Sendable (Int) -> SyncReport.Entry) {
        positions = nil
        count_ = count
        statusAt = status
        self.make = make
    }

    public init(_ rows: [SyncReport.Entry]) {
        self.init(count: rows.count, status: { rows[$0].status }, make: { rows[$0] })
    }

    public init(arrayLiteral rows: SyncReport.Entry...) {
        self.init(rows)
    }

    private init(positions: [Int], of rows: ReportRows) {
        self.positions = positions
        count_ = positions.count
        statusAt = rows.statusAt
        make = rows.make
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { count_ }
    public subscript(position: Int) -> SyncReport.Entry { make(positions?[position] ?? position) }

    /// The status of the row at `position`, without making the row.
    public func status(at position: Int) -> EntryStatus { statusAt(positions?[position] ?? position) }

    /// The rows whose status `keep` takes, in order, each made only when read.
    public func with(_ keep: (EntryStatus) -> Bool) -> ReportRows {
        ReportRows(positions: indices.filter { keep(status(at: $0)) }.map { positions?[$0] ?? $0 }, of: self)
    }

    public static func == (a: ReportRows, b: ReportRows) -> Bool {
        a.elementsEqual(b)
    }
}
