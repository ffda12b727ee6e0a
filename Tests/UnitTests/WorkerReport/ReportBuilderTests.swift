import Foundation
import Synchronization
import Testing
import WorkerStore
import WorkerTestSupport

@testable import WorkerPlan
@testable import WorkerReport

/// The one retention rule of report rows, shared by `sync` and `plan`.
@Suite(.hangLimit) struct ReportBuilderTests {
    static func row(_ url: String, _ status: EntryStatus) -> SyncReport.Entry {
        SyncReport.Entry(url: url, hash: nil, status: status)
    }

    /// For builders given whole rows only: none is made from facts.
    static let unused: @Sendable (Int, EntryStatus, RowFacts) -> SyncReport.Entry = { order, status, _ in
        row("made u\(order)", status)
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
        #expect(rows.entries(making: Self.unused).map(\.url) == ["u0", "u1", "u3", "u5"])
        #expect(built == 4, "rows past the limit are never built")
        #expect(
            rows.totals.added == 2 && rows.totals.updated == 1 && rows.totals.reused == 1 && rows.totals.failed == 2,
            "every entry is counted, listed or not")
    }

    @Test func unchangedEntriesOnlyWhenAskedFor() {
        var quiet = ReportBuilder(listLimit: nil, reportAll: false)
        var all = ReportBuilder(listLimit: nil, reportAll: true)
        for order in 0..<3 {
            quiet.add(.unchanged, order: order) { Self.row("u\(order)", .unchanged) }
            all.add(.unchanged, order: order) { Self.row("u\(order)", .unchanged) }
        }
        #expect(quiet.entries(making: Self.unused).isEmpty && quiet.totals.unchanged == 3)
        #expect(all.entries(making: Self.unused).count == 3 && all.totals.unchanged == 3)
    }

    @Test func rowsComeOutInOrderWhateverOrderTheyFinished() {
        var rows = ReportBuilder(listLimit: nil, reportAll: false)
        for order in [4, 0, 3, 1, 2] {
            rows.add(.added, order: order) { Self.row("u\(order)", .added) }
        }
        #expect(rows.entries(making: Self.unused).map(\.url) == ["u0", "u1", "u2", "u3", "u4"])
    }

    /// Rows kept as facts are made as the report is read, in order among the whole ones.
    @Test func rowsKeptAsFactsAreMadeInOrderAmongWholeOnes() {
        var rows = ReportBuilder(listLimit: nil, reportAll: true)
        rows.add(.added, order: 3, facts: RowFacts(size: 30, attempts: 2, source: .remote))
        rows.add(.failed, order: 1) { Self.row("whole u1", .failed) }
        rows.add(.unchanged, order: 0, facts: RowFacts(size: 0))
        rows.add(.failed, order: 2) { Self.row("whole u2", .failed) }
        let made = rows.entries { order, status, facts in
            SyncReport.Entry(url: "made u\(order)", status: status, bytes: facts.size, attempts: facts.attempts, source: facts.source)
        }
        #expect(made.map(\.url) == ["made u0", "whole u1", "whole u2", "made u3"])
        #expect(made.map(\.status) == [.unchanged, .failed, .failed, .added])
        #expect(made[3].bytes == 30 && made[3].attempts == 2 && made[3].source == .remote)
        #expect(made[0].bytes == 0 && made[0].attempts == nil && made[0].source == nil)
        #expect(rows.totals.updated == 0 && rows.totals.failed == 2)
    }

    /// Beyond a batch, facts are written to an unlinked file in the given folder and read back in
    /// order: the rows made are those made from facts kept in memory, and so are they when the
    /// folder cannot take a file. Nothing is left in the folder.
    @Test func factsWrittenToAFileComeBackAsKeptInMemory() throws {
        let count = RowFactsFile.batch * 3 + 17
        let folder = TemporaryDirectory()
        func build(_ directory: String?) -> [SyncReport.Entry] {
            var rows = ReportBuilder(listLimit: nil, reportAll: true, factsDirectory: directory)
            // Out of order (as downloads finish), of two statuses, some whole.
            for order in (0..<count).reversed() where order % 5 != 0 {
                if order % 11 == 1 {
                    rows.add(.updated, order: order, facts: RowFacts(size: Int64(order * 2), source: .remote))
                } else {
                    rows.add(
                        .added, order: order,
                        facts: RowFacts(
                            object: order % 3 == 0 ? nil : Self.name(order), size: Int64(order),
                            attempts: order % 4 == 0 ? nil : order % 7,
                            source: order % 2 == 0 ? .origin : .local))
                }
            }
            for order in stride(from: 0, to: count, by: 5) {
                rows.add(.failed, order: order) { Self.row("whole u\(order)", .failed) }
            }
            return Array(
                rows.entries { order, status, facts in
                    SyncReport.Entry(
                        url: "made u\(order)", hash: facts.object?.hex, status: status, bytes: facts.size,
                        attempts: facts.attempts, source: facts.source)
                })
        }
        let inMemory = build(nil)
        #expect(inMemory.count == count)
        #expect(inMemory[1] == SyncReport.Entry(url: "made u1", status: .updated, bytes: 2, source: .remote))
        #expect(inMemory[3] == SyncReport.Entry(url: "made u3", status: .added, bytes: 3, attempts: 3, source: .local))
        #expect(inMemory[4].hash == Self.name(4).hex && inMemory[4].attempts == nil && inMemory[4].source == .origin)
        #expect(inMemory[5].url == "whole u5")
        /// Where two builds first differ (a short message where a whole comparison is megabytes).
        func firstDifference(_ made: [SyncReport.Entry]) -> Int? {
            made.count != inMemory.count ? min(made.count, inMemory.count) : made.indices.first { made[$0] != inMemory[$0] }
        }
        #expect(firstDifference(build(folder.path)) == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
        #expect(firstDifference(build(folder.path + "/missing")) == nil)
    }

    private static func name(_ order: Int) -> ObjectName {
        var digest = [UInt8](repeating: 0, count: 32)
        withUnsafeBytes(of: UInt64(order).bigEndian) { digest.replaceSubrange(0..<8, with: $0) }
        digest[31] = 0xab
        return digest.withUnsafeBytes { ObjectName(digest: $0)! }
    }

    /// Rows of some statuses are picked without making the others (a writer listing failures
    /// of a million-row report makes only those).
    @Test func rowsPickedByStatusAreTheOnlyOnesMade() {
        let statuses: [EntryStatus] = [.added, .failed, .unchanged, .failed, .updated]
        let made = Mutex<[Int]>([])
        let rows = ReportRows(count: statuses.count, status: { statuses[$0] }) { position in
            made.withLock { $0.append(position) }
            return SyncReport.Entry(url: "u\(position)", status: statuses[position])
        }
        let failed = rows.with { $0 == .failed }
        #expect(failed.count == 2 && failed.status(at: 1) == .failed)
        #expect(made.withLock { $0 }.isEmpty)
        #expect(failed.map(\.url) == ["u1", "u3"])
        #expect(failed.with { _ in true }.map(\.url) == ["u1", "u3"])
        #expect(made.withLock { $0 } == [1, 3, 1, 3])
        #expect(rows == ReportRows(statuses.indices.map { SyncReport.Entry(url: "u\($0)", status: statuses[$0]) }))
    }
}
