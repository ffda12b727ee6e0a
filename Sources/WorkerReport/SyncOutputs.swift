import FoundationEssentials
import Glibc
import WorkerPlan
import WorkerStore
import WorkerSupport

/// The files a sync writes besides the cache, each in its format (`ReportFormat`). Written by
/// the engine at the end of the run, under its lock, before the previous versions of updated
/// entries are deleted (the HTML report shows them as "before").
public struct SyncOutputs: Sendable {
    /// One file: its format, its path, and whether it is appended to (a file others write too).
    public struct File: Sendable {
        public let format: any ReportFormat
        public let path: String
        public let appends: Bool

        public init(_ format: any ReportFormat, _ path: String, appends: Bool = false) {
            self.format = format
            self.path = path
            self.appends = appends
        }
    }

    /// In the order they are written.
    public var files: [File] = []

    public init(_ files: [File] = []) {
        self.files = files
    }

    /// The rows the files list together.
    public var rows: ReportRowNeeds {
        files.reduce(into: []) { $0.formUnion($1.format.rows) }
    }

    /// Writes each file (atomically, or appended).
    public func write(_ report: SyncReport, success: Bool) throws(CacheError) {
        for file in files {
            do {
                try file.format.write(report, success: success, to: file.path, appending: file.appends)
            } catch {
                throw CacheError.output(path: file.path, reason: ErrorText.describe(error))
            }
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
