import Foundation
import Testing
import WorkerTestSupport

@testable import WorkerReport

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// The report writers' shapes, from a report built by hand.
@Suite(.hangLimit) struct ReportWriterTests {
    static let report: SyncReport = {
        var report = SyncReport(
            startedAt: Date(timeIntervalSince1970: 0), finishedAt: Date(timeIntervalSince1970: 1.5),
            cacheDirectory: "/cache", manifests: [.init(path: "m.yaml", name: "m", entries: 2)])
        report.totals.entries = 2
        report.totals.added = 1
        report.totals.failed = 1
        report.entries = [
            SyncReport.Entry(url: "https://a.example/1.png", hash: nil, status: .added, bytes: 3, manifest: "m"),
            {
                var entry = SyncReport.Entry(url: "https://a.example/2.png", hash: nil, status: .failed, manifest: "m")
                entry.reason = .httpStatus
                entry.error = "HTTP 404 <&>"
                entry.httpStatus = 404
                return entry
            }(),
        ]
        return report
    }()

    @Test func junitHasACasePerEntryAndAFailurePerFailedOne() {
        let xml = JUnitReportWriter.xml(Self.report)
        #expect(xml.hasPrefix("<?xml"))
        #expect(xml.contains(#"<testsuite name="m" tests="2" failures="1" file="m.yaml">"#))
        #expect(xml.contains(#"<failure type="http_status" message="HTTP 404 &lt;&amp;&gt;">"#), "\(xml)")
        #expect(XMLParser(data: Data(xml.utf8)).parse(), "well-formed")
    }

    @Test func markdownAndMetricsCarryTheTotals() throws {
        let markdown = MarkdownSummaryWriter.markdown(Self.report)
        #expect(markdown.hasPrefix("### ❌ worker sync: m\n"))
        // The server's words are text: `<&>` would be read as HTML.
        #expect(markdown.contains("| https://a.example/2.png | `http_status` | HTTP 404 \\<\\&\\> |"), "\(markdown)")
        let metrics = PrometheusMetricsWriter.text(Self.report, success: false)
        #expect(metrics.contains(#"worker_sync_success{manifests="m"} 0"#))
        #expect(metrics.contains(#"worker_sync_entries{manifests="m",status="failed"} 1"#), "\(metrics)")
        #expect(
            PrometheusMetricsWriter().recognizes(metrics) && MarkdownSummaryWriter().recognizes(markdown)
                && JUnitReportWriter().recognizes(JUnitReportWriter.xml(Self.report)), "each output recognizes its own format")
        #expect(!JSONReportWriter().recognizes(metrics) && !HTMLReportWriter().recognizes(markdown))
        // Each format recognizes what it writes and no other format's file.
        let formats: [any ReportFormat] = [
            JSONReportWriter(), JUnitReportWriter(), PrometheusMetricsWriter(), HTMLReportWriter(),
            MarkdownSummaryWriter(),
        ]
        for format in formats {
            let head = String(decoding: try format.data(Self.report, success: false).prefix(4096), as: UTF8.self)
            #expect(formats.filter { $0.recognizes(head) }.map(\.option) == [format.option], "\(format.option)")
        }
    }
}
