/// A report's rows, in manifest order. Either given whole (a decoded or hand-made report), or
/// made one at a time as a writer reads them from what the run kept of each (`ReportBuilder`'s
/// compact rows: a million-entry report is written without a million `Entry` values in memory).
public struct ReportRows: RandomAccessCollection, ExpressibleByArrayLiteral, Equatable, Sendable {
    private let count_: Int
    private let make: @Sendable (Int) -> SyncReport.Entry

    /// Rows made on demand: `make(position)` for each position below `count`.
    package init(count: Int, make: @escaping @Sendable (Int) -> SyncReport.Entry) {
        count_ = count
        self.make = make
    }

    public init(_ rows: [SyncReport.Entry]) {
        self.init(count: rows.count) { rows[$0] }
    }

    public init(arrayLiteral rows: SyncReport.Entry...) {
        self.init(rows)
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { count_ }
    public subscript(position: Int) -> SyncReport.Entry { make(position) }

    public static func == (a: ReportRows, b: ReportRows) -> Bool {
        a.elementsEqual(b)
    }
}
