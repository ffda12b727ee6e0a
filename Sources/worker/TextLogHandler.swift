import FoundationEssentials
import Logging
import WorkerSupport

/// The text log lines on stderr (without `--log-format json`): swift-log's stream format, with
/// every line through `Sanitize.terminal` (a URL or a server's words in metadata are printed).
struct TextLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 })
        let fields = merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let time = Date().formatted(Date.ISO8601FormatStyle())
        let line = "\(time) \(event.level) \(label) :\(fields.isEmpty ? "" : " " + fields) \(event.message)"
        Console.write(2, Data((Sanitize.terminal(line) + "\n").utf8))
    }
}
