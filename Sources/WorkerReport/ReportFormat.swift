import FoundationEssentials

/// A file a command writes besides the cache, as `OutputGuard` knows it: the option that names it
/// and how an earlier one is recognised (an output replaces nothing else).
public protocol OutputFormat: Sendable {
    /// The option that names the file (`--junit`).
    var option: String { get }
    /// Whether `head` (the first bytes of an existing file) is what this format writes.
    func recognizes(_ head: String) -> Bool
}

/// A format a sync's report is written in (`--report`, `--junit`, `--metrics`, …): one type per
/// format, in its writer's file — what the guard knows, which rows it lists, how it is written.
/// The command line names the formats it offers with their options (`OutputOptions`); the rest
/// (`SyncOutputs`, `OutputGuard`, the rows a run keeps) asks each format, so a new one is its
/// own file and its option.
public protocol ReportFormat: OutputFormat {
    /// The rows it lists.
    var rows: ReportRowNeeds { get }
    /// Its bytes for `report` (`success`: whether the run's exit rule let it succeed).
    func data(_ report: SyncReport, success: Bool) throws -> Data
    /// Writes them to `path` atomically, or appends them (`appending`: a file others write too,
    /// as GitHub's `$GITHUB_STEP_SUMMARY`).
    func write(_ report: SyncReport, success: Bool, to path: String, appending: Bool) throws
}

extension ReportFormat {
    public func write(_ report: SyncReport, success: Bool, to path: String, appending: Bool) throws {
        let bytes = try data(report, success: success)
        if appending {
            try AtomicFile.append(bytes, to: path)
        } else {
            try AtomicFile.write(bytes, to: path)
        }
    }
}

/// Which of a run's rows a format lists. Failures are always kept; without any format that
/// lists rows, a run keeps only as many as its terminal summary shows.
public struct ReportRowNeeds: OptionSet, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Every entry that is not unchanged, however many.
    public static let changed = ReportRowNeeds(rawValue: 1)
    /// Unchanged entries too.
    public static let unchanged = ReportRowNeeds(rawValue: 2)
}
