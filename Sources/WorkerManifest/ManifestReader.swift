import FoundationEssentials
import Glibc
import WorkerSupport

/// Streams a manifest's YAML events and yields its entries one at a time, collecting every
/// problem it finds with its position. Nothing but the current event and the header is held.
public struct ManifestReader {
    public let path: String
    /// Stop collecting after this many problems.
    var maxDiagnostics = 50
    /// Files at least this large are parsed on a thread of their own (tests set 0 to use it always).
    var threadedFromBytes = YAMLEventStream.threadedFromBytes

    public init(path: String) {
        self.path = path
    }

    /// Reads the whole manifest, calling `onEntry` for each well-formed entry in document order,
    /// with the header fields read so far (`base_url` may come before or after the entries).
    /// Problems are appended to `diagnostics`; a YAML syntax error ends the read.
    public func read(diagnostics: inout [ManifestDiagnostic], onEntry: (RawEntry, ManifestHeader) -> Void) -> ManifestHeader {
        var header = ManifestHeader()
        let stream: YAMLEventStream
        do {
            stream = try YAMLEventStream(path: path, threadedFromBytes: threadedFromBytes)
        } catch {
            diagnostics.append(error)
            return header
        }
        var walker = ManifestWalker(path: path, stream: stream, limit: maxDiagnostics)
        walker.readDocument(into: &header, onEntry: onEntry)
        diagnostics.append(contentsOf: walker.diagnostics)
        return header
    }
}

/// Recursive descent over the event stream. Every `read…` function consumes exactly one node.
struct ManifestWalker {
    let path: String
    var stream: YAMLEventStream
    let limit: Int
    var diagnostics: [ManifestDiagnostic] = []
    /// Set by a syntax error or by too many problems: stop reading.
    var stopped = false
    /// Open mappings and lists around the current event.
    var depth = 0
    /// A manifest needs three levels (the document, `entries`, an entry); anything far deeper is
    /// refused at once instead of walked (libyaml's cost grows with the square of the depth).
    static let maxDepth = 64

    init(path: String, stream: YAMLEventStream, limit: Int) {
        self.path = path
        self.stream = stream
        self.limit = limit
    }

    // MARK: - Events and problems

    mutating func next() -> YAMLEvent? {
        guard !stopped else { return nil }
        switch stream.next() {
        case .success(let event):
            if event.kind == .alias {
                report(event, "YAML aliases are not allowed in a manifest")
                stopped = true
                return nil
            }
            if event.hasAnchor {
                report(event, "YAML anchors are not allowed in a manifest")
            }
            switch event.kind {
            case .mappingStart, .sequenceStart:
                depth += 1
                if depth > Self.maxDepth {
                    report(event, "nesting deeper than \(Self.maxDepth) levels (a manifest needs 3)")
                    stopped = true
                    return nil
                }
            case .mappingEnd, .sequenceEnd:
                depth -= 1
            default:
                break
            }
            return event
        case .failure(let error):
            report(line: error.line, column: error.column, error.message, kind: .syntax)
            stopped = true
            return nil
        }
    }

    mutating func report(_ event: YAMLEvent, _ message: String) {
        report(line: event.line, column: event.column, message)
    }

    mutating func report(line: Int, column: Int, _ message: String, kind: ManifestDiagnostic.Kind = .content) {
        guard !stopped else { return }
        diagnostics.append(ManifestDiagnostic(path: path, line: line, column: column, message: message, kind: kind))
        if diagnostics.count >= limit { stopped = true }
    }

    /// Consumes the rest of a node whose first event was `event`.
    mutating func skip(after event: YAMLEvent) {
        guard event.kind == .mappingStart || event.kind == .sequenceStart else { return }
        var depth = 1
        while depth > 0, let inner = next() {
            switch inner.kind {
            case .mappingStart, .sequenceStart: depth += 1
            case .mappingEnd, .sequenceEnd: depth -= 1
            default: break
            }
        }
    }

    static func describe(_ event: YAMLEvent) -> String {
        switch event.kind {
        case .mappingStart: "a mapping"
        case .sequenceStart: "a list"
        case .scalar: event.isNull ? "null" : "a scalar"
        default: "nothing"
        }
    }

    // MARK: - Document

    mutating func readDocument(into header: inout ManifestHeader, onEntry: (RawEntry, ManifestHeader) -> Void) {
        guard let start = next(), start.kind == .streamStart else { return }
        guard let doc = next() else { return }
        if doc.kind == .streamEnd {
            report(line: 1, column: 1, "manifest is empty (expected a mapping with 'version' and 'entries')")
            return
        }
        guard let top = next() else { return }
        guard top.kind == .mappingStart else {
            report(top, "the manifest must be a mapping with 'version' and 'entries', found \(Self.describe(top))")
            skip(after: top)
            return
        }
        readTopMapping(start: top, into: &header, onEntry: onEntry)
        guard let end = next(), end.kind == .documentEnd else { return }
        if let after = next(), after.kind == .documentStart {
            report(after, "a manifest holds one YAML document; found a second one")
            stopped = true
        }
    }

    mutating func readTopMapping(start: YAMLEvent, into header: inout ManifestHeader, onEntry: (RawEntry, ManifestHeader) -> Void) {
        var seen: [String: Int] = [:]
        while let key = next(), key.kind != .mappingEnd {
            guard key.kind == .scalar else {
                report(key, "mapping keys must be plain strings")
                skip(after: key)
                if let value = next() { skip(after: value) }
                continue
            }
            if let firstLine = seen[key.value] {
                report(key, "duplicate key '\(Redact.short(key.value))' (first at line \(firstLine))")
            }
            seen[key.value] = key.line
            guard let value = next() else { return }
            switch key.value {
            case "version":
                if value.kind == .scalar, value.isPlain, let number = Int(value.value) {
                    if number != 1 { report(value, "unsupported manifest version \(number) (this worker reads version 1)") }
                    header.version = number
                } else {
                    report(value, "'version' must be the integer 1, found \(Self.describe(value))")
                    header.version = -1
                    skip(after: value)
                }
            case "name":
                if let text = string(value, key: "name") {
                    if text.isEmpty || text.contains("/") || text.contains("\0") {
                        report(value, "'name' must be a non-empty string without '/'")
                    }
                    header.name = text
                    header.namePosition = (value.line, value.column)
                }
            case "base_url":
                if let text = string(value, key: "base_url") {
                    header.baseURL = text
                    header.baseURLPosition = (value.line, value.column)
                }
            case "serial":
                if value.kind == .scalar, value.isPlain, let number = Int64(value.value), number >= 0 {
                    header.serial = number
                    header.serialPosition = (value.line, value.column)
                } else {
                    report(
                        value,
                        "'serial' must be a non-negative integer, found "
                            + (value.kind == .scalar ? "'\(Redact.short(value.value))'" : Self.describe(value)))
                    skip(after: value)
                }
            case "expires":
                if let text = string(value, key: "expires") {
                    if let time = RFC3339.parse(text) {
                        header.expires = time
                        header.expiresPosition = (value.line, value.column)
                    } else {
                        report(value, "'expires' must be an RFC 3339 time such as 2026-12-31T23:59:59Z, found '\(Redact.short(text))'")
                    }
                }
            case "headers":
                readHeaders(value, into: &header)
            case "mirrors":
                readMirrorMap(value, into: &header.mirrors)
            case "entries":
                header.hasEntries = true
                let current = header
                readEntries(value) { onEntry($0, current) }
            default:
                report(
                    key,
                    "unknown key '\(Redact.short(key.value))' (expected version, name, base_url, serial, expires, headers, mirrors, entries)"
                )
                skip(after: value)
            }
        }
        if header.version == nil {
            report(start, "missing required key 'version'")
        }
        if !header.hasEntries {
            report(start, "missing required key 'entries'")
        }
    }

    /// A non-null scalar's text; reports and skips anything else.
    mutating func string(_ value: YAMLEvent, key: String) -> String? {
        guard value.kind == .scalar, !value.isNull else {
            report(value, "'\(key)' must be a string, found \(Self.describe(value))")
            skip(after: value)
            return nil
        }
        return value.value
    }
}
