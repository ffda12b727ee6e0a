import FoundationEssentials
import Glibc

/// Streams a manifest's YAML events and yields its entries one at a time, collecting every
/// problem it finds with its position. Nothing but the current event and the header is held.
public struct ManifestReader {
    public let path: String
    /// Stop collecting after this many problems.
    public var maxDiagnostics = 50
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
                }
            case "base_url":
                if let text = string(value, key: "base_url") {
                    header.baseURL = text
                    header.baseURLPosition = (value.line, value.column)
                }
            case "headers":
                readHeaders(value, into: &header)
            case "mirrors":
                readMirrorMap(value, into: &header)
            case "entries":
                header.hasEntries = true
                let current = header
                readEntries(value) { onEntry($0, current) }
            default:
                report(key, "unknown key '\(Redact.short(key.value))' (expected version, name, base_url, headers, mirrors, entries)")
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

    // MARK: - Entries

    mutating func readEntries(_ start: YAMLEvent, onEntry: (RawEntry) -> Void) {
        guard start.kind == .sequenceStart else {
            report(start, "'entries' must be a list, found \(Self.describe(start))")
            skip(after: start)
            return
        }
        while let item = next(), item.kind != .sequenceEnd {
            guard item.kind == .mappingStart else {
                report(item, "each entry must be a mapping with 'url' (and optional 'hash', 'path' and 'mirrors'), found \(Self.describe(item))")
                skip(after: item)
                continue
            }
            if let entry = readEntry(start: item) {
                onEntry(entry)
            }
        }
    }

    mutating func readEntry(start: YAMLEvent) -> RawEntry? {
        var url: String?
        var urlPosition = (line: start.line, column: start.column)
        var hash: ContentHash?
        var hashSeen: Int?
        var urlSeen: Int?
        var path: (text: String, line: Int, column: Int)?
        var pathSeen: Int?
        var mirrors: [String] = []
        var mirrorsKey: YAMLEvent?
        var valid = true
        while let key = next(), key.kind != .mappingEnd {
            guard let value = next() else { return nil }
            guard key.kind == .scalar else {
                report(key, "mapping keys must be plain strings")
                skip(after: key)
                skip(after: value)
                valid = false
                continue
            }
            switch key.value {
            case "url":
                if let first = urlSeen { report(key, "duplicate key 'url' (first at line \(first))"); valid = false }
                urlSeen = key.line
                if let text = string(value, key: "url") {
                    if text.isEmpty { report(value, "'url' is empty"); valid = false }
                    url = text
                    urlPosition = (value.line, value.column)
                } else {
                    valid = false
                }
            case "hash":
                if let first = hashSeen { report(key, "duplicate key 'hash' (first at line \(first))"); valid = false }
                hashSeen = key.line
                guard let text = string(value, key: "hash") else { valid = false; continue }
                switch ContentHash.parse(text) {
                case .success(let parsed): hash = parsed
                case .failure(let error):
                    report(value, "bad hash: \(error.message)")
                    valid = false
                }
            case "path":
                if let first = pathSeen { report(key, "duplicate key 'path' (first at line \(first))"); valid = false }
                pathSeen = key.line
                guard let text = string(value, key: "path") else { valid = false; continue }
                if let problem = TreePath.problem(text) {
                    report(value, problem)
                    valid = false
                }
                path = (text, value.line, value.column)
            case "mirrors":
                if let first = mirrorsKey { report(key, "duplicate key 'mirrors' (first at line \(first.line))"); valid = false }
                mirrorsKey = key
                guard let list = readMirrorList(value, oneAllowed: true) else { valid = false; continue }
                mirrors = list
            default:
                report(key, "unknown key '\(Redact.short(key.value))' in entry (expected url, hash, path, mirrors)")
                skip(after: value)
                valid = false
            }
        }
        guard let url else {
            if urlSeen == nil { report(start, "entry has no 'url'") }
            return nil
        }
        if let mirrorsKey, hash == nil, hashSeen == nil {
            // Only a hash proves that another server's bytes are the entry's.
            report(mirrorsKey, "'mirrors' needs a 'hash': only bytes checked against the entry's hash may come from another URL")
            valid = false
        }
        guard valid else { return nil }
        return RawEntry(url: url, hash: hash, line: urlPosition.line, column: urlPosition.column,
                        path: path?.text, pathLine: path?.line ?? 0, pathColumn: path?.column ?? 0, mirrors: mirrors)
    }
}
