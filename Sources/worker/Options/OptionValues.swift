import ArgumentParser
import WorkerFetch
import WorkerManifest
import WorkerReport
import WorkerStore
import WorkerSupport

// The values options take, each parsed and checked once, where the argument is read: a value
// that is not one is a usage error (exit 2) naming the option, with its help line. Each says
// what its default prints as (`defaultValueDescription`): ArgumentParser's own would describe the
// value by reflection, a search of every conformance in the binary at every start.

/// An option value read from its text by `parse` (nil: not one), keeping the text as given.
protocol ParsedArgument: ExpressibleByArgument, Equatable {
    associatedtype Value: Equatable
    var value: Value { get }
    var text: String { get }
    init(value: Value, text: String)
    static func parse(_ text: String) -> Value?
}

extension ParsedArgument {
    init?(argument: String) {
        guard let value = Self.parse(argument) else { return nil }
        self.init(value: value, text: argument)
    }

    var defaultValueDescription: String { text }
}

/// A duration (`30`, `30s`, `5m`, `1h30m`, `7d`), zero or more, in seconds.
struct Seconds: ParsedArgument {
    let value: Double
    let text: String

    static func parse(_ text: String) -> Double? { Units.duration(text) }
}

/// A duration above zero (a timeout, a deadline).
struct PositiveSeconds: ParsedArgument {
    let value: Double
    let text: String

    static func parse(_ text: String) -> Double? { Units.duration(text).flatMap { $0 > 0 ? $0 : nil } }
}

extension Seconds {
    init(_ value: Double) { self.init(value: value, text: Units.formatDuration(value)) }
}

extension PositiveSeconds {
    init(_ value: Double) { self.init(value: value, text: Units.formatDuration(value)) }
}

/// A size in bytes (`256MiB`, `1MB`, `1048576`).
struct ByteSize: ParsedArgument {
    let value: Int64
    let text: String

    static func parse(_ text: String) -> Int64? { Units.size(text) }
}

/// Bytes per second above zero in curl's `--limit-rate` forms (`256K`, `1M`, `500000`; K = 1024).
struct ByteRate: ParsedArgument {
    let value: Int64
    let text: String

    static func parse(_ text: String) -> Int64? { Units.rate(text).flatMap { $0 > 0 ? $0 : nil } }
}

/// Requests per second to one origin, from 0.001 to 1,000,000.
struct RequestRate: ParsedArgument {
    let value: Double
    let text: String

    static func parse(_ text: String) -> Double? {
        Double(text).flatMap { $0 >= 0.001 && $0 <= 1_000_000 ? $0 : nil }
    }
}

/// A share from 0 % to 100 % (`50%`, or `0.5`), as a fraction.
struct Percentage: ParsedArgument {
    let value: Double
    let text: String

    static func parse(_ text: String) -> Double? {
        let share = text.hasSuffix("%") ? Double(text.dropLast()).map { $0 / 100 } : Double(text)
        return share.flatMap { (0...1).contains($0) ? $0 : nil }
    }
}

extension FailureBudget: ExpressibleByArgument {
    /// `10` or `2%`.
    public init?(argument: String) {
        self.init(argument)
    }

    public var defaultValueDescription: String {
        share.map { "\($0 * 100)%" } ?? "\(count ?? 0)"
    }
}

extension Shard: ExpressibleByArgument {
    /// `I/N` with 0 ≤ I < N.
    public init?(argument: String) {
        self.init(argument)
    }

    public var defaultValueDescription: String { description }
}

/// `--log-format`.
enum LogFormat: String, ExpressibleByArgument, CaseIterable {
    case text, json

    var defaultValueDescription: String { rawValue }
}

/// A command with `--log-format`: it says the format once parsed (`Console.decide`).
protocol LogFormatChoosing {
    var logFormat: LogFormat { get }
}

extension ProgressPrinter.Mode: ExpressibleByArgument {
    var defaultValueDescription: String { rawValue }
}

/// `--hash`: a content hash in any manifest form, parsed where it is read. A text that is not one
/// is refused in the option's own words (`--hash: bare hex hash of 2 characters …`) by the
/// command's `validate`.
struct HashArgument: ExpressibleByArgument {
    let parsed: Result<ContentHash, HashParseError>

    init(argument: String) {
        parsed = ContentHash.parse(argument)
    }
}

/// `--remote-cache URL`, parsed where it is read. A URL that cannot be the tier's is refused when
/// the settings are made, in words that never show its password (ArgumentParser's own refusal
/// would repeat the argument as given).
struct RemoteCacheURLArgument: ExpressibleByArgument {
    let parsed: Result<RemoteCacheURL, RemoteCacheProblem>

    init(argument: String) {
        parsed = RemoteCacheURL.parse(argument)
    }
}

/// `--layout`: how an exported or published folder names its files.
extension TreeLayout: ExpressibleByArgument {}
