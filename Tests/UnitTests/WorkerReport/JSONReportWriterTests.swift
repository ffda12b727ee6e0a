import FoundationEssentials
import Glibc
import Testing
import WorkerPlan
import WorkerTestSupport

@testable import WorkerFetch
@testable import WorkerReport
@testable import WorkerStore

/// The JSON report, written a row at a time, is JSONEncoder's encoding of the whole document byte
/// for byte, whatever the rows hold, and lands atomically.
@Suite(.hangLimit) struct JSONReportWriterTests {
    let started = Date(timeIntervalSince1970: 1_700_000_000.125)

    func report(rows: [SyncReport.Entry]) -> SyncReport {
        var report = SyncReport(
            startedAt: started, finishedAt: started.addingTimeInterval(2.5), cacheDirectory: "/c/\"entries\" : [",
            manifests: [SyncReport.ManifestSummary(path: "/m/a.yaml", name: "a", entries: rows.count)])
        report.entries = ReportRows(rows)
        report.totals.entries = rows.count
        return report
    }

    func whole(_ report: SyncReport, _ rows: [SyncReport.Entry]) throws -> Data {
        try JSONReportWriter.encoder().encode(JSONReportWriter.Document(report, entries: rows))
    }

    var rows: [SyncReport.Entry] {
        [
            SyncReport.Entry(
                url: "http://h/a", hash: "sha256:" + String(repeating: "a", count: 64), status: .added,
                bytes: 3, attempts: 1, path: "/c/objects/sha256/aa/x", manifest: "a", source: .origin),
            SyncReport.Entry(
                url: "http://h/b?q=1&r=\"x\"", status: .failed, reason: .httpStatus,
                error: "HTTP 500\n\t\u{1}line two ✓ — /slashes/", httpStatus: 500, stale: true),
            SyncReport.Entry(url: "http://h/c", status: .unchanged, servedBy: "http://mirror/c"),
            SyncReport.Entry(url: "http://h/é", status: .updated, previousHash: "sha256:" + String(repeating: "b", count: 64)),
        ]
    }

    /// Rows written by hand (`JSONReportRow`) are JSONEncoder's: every field, each absent
    /// alone, and strings holding every control character, quotes, backslashes, slashes, DEL and
    /// characters beyond ASCII.
    @Test func everyFieldAndEveryCharacterIsSpelledAsJSONEncoderSpellsIt() throws {
        let awkward = String(decoding: Array(0..<0x20) + Array("\"\\/\u{7f} é ✓ 😀 \u{2028}\u{2029} end".utf8), as: UTF8.self)
        let full = SyncReport.Entry(
            url: "http://h/" + awkward, hash: awkward, status: .failed, previousHash: "p" + awkward,
            bytes: Int64.max, attempts: 0, path: awkward, reason: .hashMismatch, error: awkward,
            httpStatus: -1, actualHash: awkward, stale: false, manifest: awkward,
            previousPath: awkward, refetched: awkward, source: .remote, servedBy: awkward)
        var rows = [full]
        let optional: [WritableKeyPath<SyncReport.Entry, String?>] = [
            \.hash, \.previousHash, \.path, \.error, \.actualHash,
            \.manifest, \.previousPath, \.refetched, \.servedBy,
        ]
        for path in optional {
            var row = full
            row[keyPath: path] = nil
            rows.append(row)
        }
        var row = full
        row.bytes = nil
        row.attempts = nil
        row.httpStatus = nil
        row.reason = nil
        row.source = nil
        row.stale = true
        rows.append(row)
        row.stale = nil
        rows.append(row)
        rows.append(SyncReport.Entry(url: "", status: .unchanged))
        for status in EntryStatus.allCases { rows.append(SyncReport.Entry(url: "u", status: status)) }
        let report = report(rows: rows)
        #expect(try JSONReportWriter.data(report) == whole(report, rows))
    }

    @Test func rowsWrittenOneAtATimeAreTheWholeDocumentsEncoding() throws {
        let rows = rows
        for count in [0, 1, rows.count] {
            let report = report(rows: Array(rows.prefix(count)))
            #expect(try JSONReportWriter.data(report) == whole(report, Array(report.entries)), "\(count) rows")
        }
        // With everything else the document can hold.
        var full = report(rows: rows)
        full.dryRun = true
        full.limits = SyncReport.Limits(limitRate: 1024, maxRequestsPerSecond: 2.5)
        full.remoteCache = RemoteTierCounts(url: "http://tier", readOnly: true)
        full.tree = TreeOutcome(path: "/srv/site", version: "v-0123456789abcdef")
        full.unreachableOrigins = [
            SyncReport.OriginProblem(
                origin: "http://h", problem: "refused", since: "2026-01-01T00:00:00Z",
                failed: 1, notTried: 0)
        ]
        #expect(try JSONReportWriter.data(full) == whole(full, Array(full.entries)))
        // Rows left out (unchanged ones without --report-all) are left out of the same encoding.
        let changed = full.entries.filter { $0.status != .unchanged }
        #expect(try JSONReportWriter.data(full, keep: { $0.status != .unchanged }) == whole(full, changed))
    }

    @Test func manyRowsStreamToTheFileAsTheyWouldEncodeWhole() throws {
        let many = (0..<5000).map { SyncReport.Entry(url: "http://h/\($0)", status: .added, bytes: Int64($0)) }
        let report = report(rows: many)
        let directory = TemporaryDirectory()
        let path = directory.path + "/report.json"
        try JSONReportWriter.write(report, to: path)
        let written = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(written == (try whole(report, many)))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["report.json"], "no temporary file left")
    }

    @Test func aFailingWriteLeavesNeitherTheFileNorATemporaryOne() throws {
        struct Stop: Error {}
        let directory = TemporaryDirectory()
        #expect(throws: Stop.self) {
            try AtomicFile.write(to: directory.path + "/out.json") { output in
                try output(Data("half".utf8))
                throw Stop()
            }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    /// The word-at-a-time test for bytes to escape says what a byte-by-byte one says, wherever
    /// the byte is (in a word, at its edges, in the tail) and whatever surrounds it.
    @Test func aByteToEscapeIsFoundWhereverItIs() {
        let probes: [UInt8] = Array(0..<0x20) + [0x20, 0x21, 0x22, 0x23, 0x5B, 0x5C, 0x5D, 0x7F, 0x80, 0xA2, 0xDC, 0xFF]
        for filler in [UInt8(ascii: "a"), 0x20, 0x21, 0x80, 0xFF] {
            for length in [1, 7, 8, 9, 16, 23] {
                for position in 0..<length {
                    for probe in probes {
                        var bytes = [UInt8](repeating: filler, count: length)
                        bytes[position] = probe
                        let expected = bytes.contains { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }
                        let found = bytes.withUnsafeBufferPointer { JSONReportRow.needsEscape($0) }
                        #expect(found == expected, "byte \(probe) at \(position) of \(length) among \(filler)s")
                    }
                }
            }
        }
        #expect(!JSONReportRow.needsEscape(UnsafeBufferPointer(start: nil, count: 0)))
    }
}
