import Testing
@testable import WorkerPlan
@testable import WorkerReport


/// The one retention rule of report rows, shared by `sync` and `plan`.
@Suite(.timeLimit(.minutes(1))) struct ReportBuilderTests {
    static func row(_ url: String, _ status: EntryStatus) -> SyncReport.Entry {
        SyncReport.Entry(url: url, hash: nil, status: status)
    }

    @Test func failuresAreAlwaysListedOthersWhileThereIsRoom() {
        var rows = ReportBuilder(listLimit: 2, reportAll: false)
        var built = 0
        for (order, status) in [EntryStatus.added, .updated, .added, .failed, .reused, .failed].enumerated() {
            rows.add(status, order: order) {
                built += 1
                return Self.row("u\(order)", status)
            }
        }
        #expect(rows.entries.map(\.url) == ["u0", "u1", "u3", "u5"])
        #expect(built == 4, "rows past the limit are never built")
        #expect(rows.totals.added == 2 && rows.totals.updated == 1 && rows.totals.reused == 1 && rows.totals.failed == 2,
                "every entry is counted, listed or not")
    }

    @Test func unchangedEntriesOnlyWhenAskedFor() {
        var quiet = ReportBuilder(listLimit: nil, reportAll: false)
        var all = ReportBuilder(listLimit: nil, reportAll: true)
        for order in 0..<3 {
            quiet.add(.unchanged, order: order) { Self.row("u\(order)", .unchanged) }
            all.add(.unchanged, order: order) { Self.row("u\(order)", .unchanged) }
        }
        #expect(quiet.entries.isEmpty && quiet.totals.unchanged == 3)
        #expect(all.entries.count == 3 && all.totals.unchanged == 3)
    }

    @Test func rowsComeOutInOrderWhateverOrderTheyFinished() {
        var rows = ReportBuilder(listLimit: nil, reportAll: false)
        for order in [4, 0, 3, 1, 2] {
            rows.add(.added, order: order) { Self.row("u\(order)", .added) }
        }
        #expect(rows.entries.map(\.url) == ["u0", "u1", "u2", "u3", "u4"])
    }
}
