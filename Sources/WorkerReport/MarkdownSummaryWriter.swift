import FoundationEssentials
import Glibc
import WorkerFetch
import WorkerSupport

/// A Markdown summary for CI pages (`$GITHUB_STEP_SUMMARY`): totals, then the failed entries.
public struct MarkdownSummaryWriter: ReportFormat {
    public init() {}

    public var option: String { "--summary-md" }

    public func recognizes(_ head: String) -> Bool {
        head.hasPrefix("### ") && head.contains("worker sync")
    }

    public var rows: ReportRowNeeds { .changed }

    public func data(_ report: SyncReport, success: Bool) throws -> Data {
        Data(Self.markdown(report).utf8)
    }

    public static func markdown(_ report: SyncReport, failureLimit: Int = 50) -> String {
        let totals = report.totals
        let names = report.manifests.map { Sanitize.markdown($0.name) }.joined(separator: ", ")
        let icon = totals.failed == 0 && report.error == nil ? "✅" : "❌"
        var lines = [
            "### \(icon) worker sync: \(names)",
            "",
            "| entries | unchanged | added | updated | reused | failed | removed | downloaded | time |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            "| \(totals.entries) | \(totals.unchanged) | \(totals.added) | \(totals.updated) | \(totals.reused) "
                + "| \(totals.failed) | \(totals.removed) | \(Units.formatBytes(totals.bytesDownloaded)) "
                + "| \(Text.format("%.2f", report.duration)) s |",
        ]
        if let error = report.error { lines += ["", "**Not synced:** \(cell(error))"] }
        let failed = report.failedEntries
        if !failed.isEmpty {
            lines += ["", "| failed entry | reason | detail |", "|---|---|---|"]
            for entry in failed.prefix(failureLimit) {
                lines.append(
                    "| \(cell(entry.url)) | `\(entry.reason?.rawValue ?? "failed")` | \(cell(entry.error ?? ""))\(entry.stale == true ? " (earlier version kept)" : "") |"
                )
            }
            if failed.count > failureLimit { lines += ["", "… and \(failed.count - failureLimit) more failed entries."] }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func cell(_ text: String) -> String {
        Sanitize.markdown(text)
    }
}
