import CYAML
import FoundationEssentials
import Glibc

/// Parses a YAML file through libyaml into batches of events (`fill`); memory stays bounded by
/// libyaml's buffers and a batch, whatever the size of the document. libyaml holds a whole token (a scalar) in memory
/// before it yields its event, so the input it may read between two events is capped too: a
/// 200 MB URL is refused after the cap, not after 800 MB of memory. Used by one thread (a large
/// file's is sent whole to its parsing thread).
final class LibYAMLParser {
    /// Input bytes libyaml may read between two events (the longest token, comments included).
    static let maxBytesBetweenEvents = 4 << 20
    /// The longest scalar a manifest may hold: far beyond any URL, hash or header value.
    static let maxScalarBytes = 64 << 10

    /// libyaml's state, at a fixed address (a stored struct would be checked for exclusive
    /// access on every call).
    private let parser = UnsafeMutablePointer<yaml_parser_t>.allocate(capacity: 1)
    private let fd: Int32
    /// Bytes handed to libyaml since the last event; the read handler refuses past the cap.
    fileprivate var bytesSinceEvent = 0
    fileprivate var overBudget = false
    private var lastEventLine = 1
    /// The file's size when opened.
    let byteCount: Int

    /// Opens `path`; throws a message naming the OS error.
    init(path: String) throws(ManifestDiagnostic) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            throw ManifestDiagnostic(path: path, line: 0, column: 0, message: "cannot read manifest: \(reason)", kind: .unreadable)
        }
        var info = stat()
        if fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
            close(fd)
            throw ManifestDiagnostic(path: path, line: 0, column: 0, message: "cannot read manifest: is a directory", kind: .unreadable)
        }
        self.fd = fd
        byteCount = Int(info.st_size)
        parser.initialize(to: yaml_parser_t())
        yaml_parser_initialize(parser)
        yaml_parser_set_input(
            parser,
            { data, buffer, size, sizeRead in
                let parser = Unmanaged<LibYAMLParser>.fromOpaque(data!).takeUnretainedValue()
                return parser.read(into: buffer!, size: size, sizeRead: sizeRead!)
            }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// libyaml's read handler: 1 with the bytes read (0 at the end of the file), 0 on an error.
    private func read(into buffer: UnsafeMutablePointer<UInt8>, size: Int, sizeRead: UnsafeMutablePointer<Int>) -> Int32 {
        guard bytesSinceEvent <= Self.maxBytesBetweenEvents else {
            overBudget = true
            return 0
        }
        while true {
            let count = Glibc.read(fd, buffer, size)
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { return 0 }
            bytesSinceEvent += count
            sizeRead.pointee = count
            return 1
        }
    }

    deinit {
        yaml_parser_delete(parser)
        parser.deallocate()
        close(fd)
    }

    /// Parses events into `batch` until it holds `count`, the stream's end, or an error (then
    /// `batch.failure`; the error ends the stream: nothing is parsed after it).
    func fill(_ batch: inout YAMLEventBatch, upTo count: Int) {
        while batch.events.count < count, !batch.isLast {
            parseOne(into: &batch)
        }
    }

    private func parseOne(into batch: inout YAMLEventBatch) {
        var event = yaml_event_t()
        guard yaml_parser_parse(parser, &event) == 1 else {
            if overBudget {
                batch.failure = YAMLSyntaxError(
                    line: lastEventLine, column: 1,
                    message: "a value or comment after this line runs past \(Self.maxBytesBetweenEvents >> 20) MiB; refused")
            } else {
                batch.failure = syntaxError()
            }
            return
        }
        defer { yaml_event_delete(&event) }
        bytesSinceEvent = 0
        lastEventLine = Int(event.end_mark.line) + 1
        let line = Int(event.start_mark.line) + 1
        let column = Int(event.start_mark.column) + 1
        let kind: YAMLEvent.Kind
        var hasAnchor = false
        switch event.type {
        case YAML_STREAM_START_EVENT: kind = .streamStart
        case YAML_STREAM_END_EVENT: kind = .streamEnd
        case YAML_DOCUMENT_START_EVENT: kind = .documentStart
        case YAML_DOCUMENT_END_EVENT: kind = .documentEnd
        case YAML_MAPPING_START_EVENT:
            kind = .mappingStart
            hasAnchor = event.data.mapping_start.anchor != nil
        case YAML_MAPPING_END_EVENT: kind = .mappingEnd
        case YAML_SEQUENCE_START_EVENT:
            kind = .sequenceStart
            hasAnchor = event.data.sequence_start.anchor != nil
        case YAML_SEQUENCE_END_EVENT: kind = .sequenceEnd
        case YAML_SCALAR_EVENT:
            let scalar = event.data.scalar
            guard scalar.length <= Self.maxScalarBytes else {
                batch.failure = YAMLSyntaxError(
                    line: line, column: column,
                    message: "a value of \(scalar.length) bytes; the longest a manifest allows is \(Self.maxScalarBytes)")
                return
            }
            batch.append(
                .scalar, line: line, column: column,
                text: UnsafeBufferPointer(start: scalar.value, count: scalar.length),
                isPlain: scalar.style == YAML_PLAIN_SCALAR_STYLE, hasAnchor: scalar.anchor != nil)
            return
        case YAML_ALIAS_EVENT: kind = .alias
        default:
            batch.failure = YAMLSyntaxError(line: line, column: column, message: "unexpected YAML event")
            return
        }
        batch.append(kind, line: line, column: column, text: nil, isPlain: false, hasAnchor: hasAnchor)
    }

    private func syntaxError() -> YAMLSyntaxError {
        let parser = self.parser.pointee
        let problem = parser.problem.map { String(cString: $0) } ?? "syntax error"
        var message = "YAML syntax error: \(problem)"
        if let context = parser.context {
            message += " (\(String(cString: context)) at line \(parser.context_mark.line + 1))"
        }
        if parser.error == YAML_READER_ERROR {
            return YAMLSyntaxError(line: 1, column: 1, message: "\(message) at byte offset \(parser.problem_offset)")
        }
        return YAMLSyntaxError(
            line: Int(parser.problem_mark.line) + 1, column: Int(parser.problem_mark.column) + 1,
            message: message)
    }
}
