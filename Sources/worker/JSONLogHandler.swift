import FoundationEssentials
import Glibc
import Logging

/// `--log-format json`: one JSON object a line on stderr (time, level, message, metadata).
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var object: [String: String] = [
            "time": Date().formatted(Date.ISO8601FormatStyle()),
            "level": event.level.rawValue,
            "logger": label,
            "message": event.message.description,
        ]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) {
            object[key] = value.description
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(object) else { return }
        Console.write(2, Console.escapingControls(data) + Data("\n".utf8))
    }
}
