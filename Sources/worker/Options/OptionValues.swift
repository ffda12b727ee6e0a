import ArgumentParser
import ManifestSync

// The values options take, each parsed and checked once, where the argument is read: a value
// that is not one is a usage error (exit 2) naming the option, with its help line. Each says
// what its default prints as (`defaultValueDescription`): ArgumentParser's own would describe the
// value by reflection, a search of every conformance in the binary at every start.

/// A duration (`30`, `30s`, `5m`, `1h30m`, `7d`), zero or more, in seconds.
struct Seconds: ExpressibleByArgument, Equatable {
    let value: Double
    private let text: String

    init(_ value: Double) {
        self.value = value
        text = Units.formatDuration(value)
    }

    init?(argument: String) {
        guard let seconds = Units.duration(argument) else { return nil }
        value = seconds
        text = argument
    }

    var defaultValueDescription: String { text }
}

/// A duration above zero (a timeout, a deadline).
struct PositiveSeconds: ExpressibleByArgument, Equatable {
    let value: Double
    private let text: String

    init(_ value: Double) {
        self.value = value
        text = Units.formatDuration(value)
    }

    init?(argument: String) {
        guard let seconds = Units.duration(argument), seconds > 0 else { return nil }
        value = seconds
        text = argument
    }

    var defaultValueDescription: String { text }
}

/// A size in bytes (`256MiB`, `1MB`, `1048576`).
struct ByteSize: ExpressibleByArgument, Equatable {
    let bytes: Int64
    private let text: String

    init(_ bytes: Int64, _ text: String) {
        self.bytes = bytes
        self.text = text
    }

    init?(argument: String) {
        guard let bytes = Units.size(argument) else { return nil }
        self.bytes = bytes
        text = argument
    }

    var defaultValueDescription: String { text }
}

/// Bytes per second in curl's `--limit-rate` forms (`256K`, `1M`, `500000`; K = 1024).
struct ByteRate: ExpressibleByArgument, Equatable {
    let bytesPerSecond: Int64
    private let text: String

    init?(argument: String) {
        guard let rate = Units.rate(argument), rate > 0 else { return nil }
        bytesPerSecond = rate
        text = argument
    }

    var defaultValueDescription: String { text }
}

/// Requests per second to one origin, from 0.001 to 1,000,000.
struct RequestRate: ExpressibleByArgument, Equatable {
    let perSecond: Double

    init?(argument: String) {
        guard let value = Double(argument), value >= 0.001, value <= 1_000_000 else { return nil }
        perSecond = value
    }

    var defaultValueDescription: String { "\(perSecond)" }
}

/// A share from 0 % to 100 % (`50%`, or `0.5`).
struct Percentage: ExpressibleByArgument, Equatable {
    let share: Double
    private let text: String

    init(_ share: Double) {
        self.share = share
        text = "\(Int(share * 100))%"
    }

    init?(argument: String) {
        let share = argument.hasSuffix("%") ? Double(argument.dropLast()).map { $0 / 100 } : Double(argument)
        guard let share, (0...1).contains(share) else { return nil }
        self.share = share
        text = argument
    }

    var defaultValueDescription: String { text }
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

extension ProgressPrinter.Mode: ExpressibleByArgument {
    var defaultValueDescription: String { rawValue }
}
