import FoundationEssentials
import Glibc
import WorkerPlan
import WorkerStore
import WorkerSupport

/// Writes the JSON report (schema 1) atomically: a temporary file renamed over the target. The
/// rows are encoded one at a time as the file is written, so a report of a million rows never
/// exists as one encoded tree or one block of bytes (JSONEncoder's output for the whole document,
/// byte for byte: `JSONReportWriterTests`). As a format (`--report`): the entries that are not
/// unchanged, or every entry (`all`, `--report-all`).
public struct JSONReportWriter: ReportFormat {
    public var all: Bool

    public init(all: Bool = false) {
        self.all = all
    }

    public var option: String { "--report" }

    /// Keys are sorted: `cache_dir` leads.
    public func recognizes(_ head: String) -> Bool {
        head.hasPrefix("{") && head.contains("\"cache_dir\"")
    }

    public var rows: ReportRowNeeds { all ? [.changed, .unchanged] : .changed }

    public func data(_ report: SyncReport, success: Bool) throws -> Data {
        try Self.data(report) { all || $0.status != .unchanged }
    }

    /// Streamed to the file, row by row (never appended: a JSON document).
    public func write(_ report: SyncReport, success: Bool, to path: String, appending: Bool) throws {
        try Self.write(report, to: path) { all || $0.status != .unchanged }
    }

    struct Document: Encodable {
        var schema = 1
        var workerVersion = WorkerVersion.current
        let dryRun: Bool
        let startedAt: String
        let finishedAt: String
        let durationSeconds: Double
        let cacheDir: String
        let manifests: [SyncReport.ManifestSummary]
        let totals: SyncReport.Totals
        var entries: [SyncReport.Entry]
        let unreachableOrigins: [SyncReport.OriginProblem]?
        let failover: [SyncReport.Failover]?
        let rewrite: SyncReport.Rewrite?
        let limits: SyncReport.Limits?
        let remoteCache: SyncReport.RemoteCache?
        let tree: TreeOutcome?
        let error: String?

        enum CodingKeys: String, CodingKey {
            case schema
            case workerVersion = "worker_version"
            case dryRun = "dry_run"
            case startedAt = "started_at"
            case finishedAt = "finished_at"
            case durationSeconds = "duration_seconds"
            case cacheDir = "cache_dir"
            case manifests, totals, entries
            case unreachableOrigins = "unreachable_origins"
            case failover, rewrite
            case limits
            case remoteCache = "remote_cache"
            case tree, error
        }

        /// The report's document; its rows are given separately (`entries` is left empty).
        init(_ report: SyncReport, entries: [SyncReport.Entry] = []) {
            let format = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
            dryRun = report.dryRun
            startedAt = report.startedAt.formatted(format)
            finishedAt = report.finishedAt.formatted(format)
            durationSeconds = (report.duration * 1000).rounded() / 1000
            cacheDir = report.cacheDirectory
            manifests = report.manifests
            totals = report.totals
            self.entries = entries
            unreachableOrigins = report.unreachableOrigins.isEmpty ? nil : report.unreachableOrigins
            failover = report.failover.isEmpty ? nil : report.failover
            rewrite = report.rewrite
            limits = report.limits
            remoteCache = report.remoteCache
            tree = report.tree
            error = report.error
        }
    }

    private static let newline: [UInt8] = Array("\n".utf8)
    private static let rowSeparator: [UInt8] = Array(",\n".utf8)

    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// The report's bytes, rows with `keep` (every row by default).
    public static func data(_ report: SyncReport, keep: (SyncReport.Entry) -> Bool = { _ in true }) throws -> Data {
        var data = Data()
        try encode(report, keep: keep) { data.append($0) }
        return data
    }

    /// Writes the report to `path` atomically, rows with `keep`.
    public static func write(_ report: SyncReport, to path: String, keep: (SyncReport.Entry) -> Bool = { _ in true }) throws {
        try AtomicFile.write(to: path) { output in try encode(report, keep: keep, to: output) }
    }

    /// Hands the report's bytes to `output` in pieces: the document around its `entries` array,
    /// then each row, indented as the whole document's encoding indents it.
    static func encode(_ report: SyncReport, keep: (SyncReport.Entry) -> Bool, to output: (Data) throws -> Void) throws {
        let encoder = encoder()
        let document = try encoder.encode(Document(report))
        // The top level is indented by two spaces, and only it: the one `entries` key there.
        let marker = Data("\n  \"entries\" : [".utf8)
        guard let found = document.firstRange(of: marker) else {
            throw EncodingError.invalidValue(report, .init(codingPath: [], debugDescription: "no entries array"))
        }
        // An empty array is `[\n\n  ]`; a full one `[\n    {…},\n    {…}\n  ]`.
        let emptyRest = Data("\n\n  ]".utf8)
        guard document[found.upperBound...].starts(with: emptyRest) else {
            throw EncodingError.invalidValue(report, .init(codingPath: [], debugDescription: "unexpected entries array"))
        }
        let rowsEnd = found.upperBound + 2
        var wroteRow = false
        var pending = [UInt8](document[..<found.upperBound])
        for row in report.entries where keep(row) {
            pending.append(contentsOf: wroteRow ? Self.rowSeparator : Self.newline)
            JSONReportRow.append(row, to: &pending)
            wroteRow = true
            if pending.count >= 1 << 16 {
                try output(Data(pending))
                pending.removeAll(keepingCapacity: true)
            }
        }
        pending.append(contentsOf: Array((wroteRow ? "\n" : "\n\n").utf8))
        pending.append(contentsOf: document[rowsEnd...])
        try output(Data(pending))
    }
}
