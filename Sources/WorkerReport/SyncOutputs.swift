import FoundationEssentials
import Glibc
import WorkerPlan
import WorkerStore
import WorkerSupport

/// The files a sync writes besides the cache, and the rule that decides its exit code. Written
/// by the engine at the end of the run, under its lock, before the previous versions of updated
/// entries are deleted (the HTML report shows them as "before").
public struct SyncOutputs: Sendable {
    /// The JSON report; it lists every entry that is not unchanged, or all with `reportAll`.
    public var report: String?
    public var reportAll = false
    public var junit: String?
    public var summary: String?
    /// A Markdown summary to append to (GitHub's `$GITHUB_STEP_SUMMARY`), when `summary` is nil.
    public var appendedSummary: String?
    public var metrics: String?
    public var html: String?

    public init() {}

    /// Whether the report must keep every row (a writer lists them all).
    package var needsAllRows: Bool { junit != nil || html != nil || summary != nil || appendedSummary != nil }

    /// Writes each file asked for, atomically (the appended summary is appended).
    package func write(_ report: SyncReport, success: Bool) throws(CacheError) {
        if let path = self.report {
            let reportAll = reportAll
            do {
                try JSONReportWriter.write(report, to: path) { reportAll || $0.status != .unchanged }
            } catch {
                throw CacheError.output(path: path, reason: ErrorText.describe(error))
            }
        }
        if let junit { try write(junit) { Data(JUnitReportWriter.xml(report).utf8) } }
        if let metrics { try write(metrics) { Data(PrometheusMetricsWriter.text(report, success: success).utf8) } }
        if let html { try write(html) { Data(HTMLReportWriter.html(report).utf8) } }
        if let summary {
            try write(summary) { Data(MarkdownSummaryWriter.markdown(report).utf8) }
        } else if let appendedSummary {
            do {
                try AtomicFile.append(Data(MarkdownSummaryWriter.markdown(report).utf8), to: appendedSummary)
            } catch {
                throw CacheError.output(path: appendedSummary, reason: ErrorText.describe(error))
            }
        }
    }

    private func write(_ path: String, _ contents: () throws -> Data) throws(CacheError) {
        do {
            try AtomicFile.write(contents(), to: path)
        } catch {
            throw CacheError.output(path: path, reason: ErrorText.describe(error))
        }
    }
}

/// `--max-failures`: how many failed entries a run may have and still succeed.
public struct FailureBudget: Sendable, Equatable {
    public var count: Int?
    /// A share of the entries (0...1).
    public var share: Double?
    /// `--fail-on-failover`: a run in which mirrors served because an entry's own URL failed
    /// does not succeed.
    public var failsOnFailover = false

    public static let none = FailureBudget(count: 0, share: nil)

    /// `10` or `2%`; nil for anything else.
    public init?(_ text: String) {
        if text.hasSuffix("%"), let percent = Double(text.dropLast()), (0...100).contains(percent) {
            self.init(count: nil, share: percent / 100)
        } else if let count = Int(text), count >= 0 {
            self.init(count: count, share: nil)
        } else {
            return nil
        }
    }

    public init(count: Int?, share: Double?) {
        self.count = count
        self.share = share
    }

    /// The success rule: failures within the budget, no refused prune, and (when asked) no failover.
    public func allows(_ report: SyncReport) -> Bool {
        let allowed = count ?? Int((Double(report.totals.entries) * (share ?? 0)).rounded(.down))
        return report.totals.failed <= allowed && report.pruneRefused == nil && !(failsOnFailover && !report.failover.isEmpty)
    }
}
