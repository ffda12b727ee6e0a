import FoundationEssentials
import WorkerSupport

/// A manifest's `mirrors` mapping: URL prefixes and the prefixes of other servers holding the
/// same files. An entry pinned by a hash whose URL starts with a prefix may also be fetched from
/// each mirror prefix + the rest of its URL (after the entry's own `mirrors`).
public struct ManifestMirrors: Sendable, Equatable {
    public struct Prefix: Sendable, Equatable {
        public let prefix: String
        public let mirrors: [String]
        /// `prefix` parsed (a map is read only when it parses).
        let parsed: ParsedURL?
        /// Each mirror's kind, in `mirrors`' order.
        let kinds: [(any URLKind)?]

        init(prefix: String, mirrors: [String]) {
            self.prefix = prefix
            self.mirrors = mirrors
            parsed = URLKinds.parse(prefix)
            kinds = mirrors.map(URLKinds.kind(of:))
        }

        public static func == (left: Prefix, right: Prefix) -> Bool {
            left.prefix == right.prefix && left.mirrors == right.mirrors
        }
    }

    public private(set) var prefixes: [Prefix] = []

    public init(_ prefixes: [Prefix] = []) {
        self.prefixes = prefixes
    }

    public var isEmpty: Bool { prefixes.isEmpty }

    /// The mirror URLs the map gives `url`, in the map's order: a prefix covers the URLs of its
    /// origin (any spelling of it; user info apart) whose path goes on from its own at a segment
    /// boundary. S3 keys are literal and URL paths percent-encoded: the rest of an `s3://` URL is
    /// encoded for an http(s) mirror, and the rest of an http(s) URL decoded for an `s3://` one.
    public func mirrors(for url: String) -> [String] {
        guard !prefixes.isEmpty, let parsed = URLKinds.parse(url) else { return [] }
        var found: [String] = []
        for entry in prefixes {
            guard let prefix = entry.parsed, parsed.isUnder(prefix) else { continue }
            let tail = parsed.rest(after: prefix)
            for (mirror, kind) in zip(entry.mirrors, entry.kinds) {
                guard let kind, let joined = ParsedURL.joining(mirror, of: kind, tail, from: parsed.kind) else { continue }
                found.append(joined)
            }
        }
        return found
    }

    /// Where an entry pinned by a hash may be fetched from besides its URL, in order: its own
    /// `mirrors`, then this map's. None without a hash (the bytes could not be checked).
    public func of(_ entry: ManifestEntry) -> [String] {
        guard entry.hash != nil else { return [] }
        if prefixes.isEmpty { return entry.mirrors }
        var all = entry.mirrors
        for mirror in mirrors(for: entry.url) where mirror != entry.url && !all.contains(mirror) {
            all.append(mirror)
        }
        return all
    }

    mutating func append(_ prefix: String, _ mirrors: [String]) {
        prefixes.append(Prefix(prefix: prefix, mirrors: mirrors))
    }
}

/// `mirrors` in the manifest: a list on an entry, a mapping at the top.
extension ManifestWalker {
    /// An entry's `mirrors`: a list of absolute http(s) or s3 URLs; nil (reported) when it is not one.
    /// (`prefixes`: the map's values, prefixes to which the rest of a URL is appended; else whole
    /// URLs, an `s3://` one with its key.)
    /// (`oneAllowed`: a single URL may be written without a list.)
    mutating func readMirrorList(_ start: YAMLEvent, prefixes: Bool = false, oneAllowed: Bool = false) -> [String]? {
        if oneAllowed, start.kind == .scalar, !start.isNull {
            if let problem = Self.mirrorProblem(start.value, prefixes: prefixes) {
                report(start, problem)
                return nil
            }
            return [start.value]
        }
        guard start.kind == .sequenceStart else {
            report(start, "'mirrors' must be a list of URLs, found \(Self.describe(start))")
            skip(after: start)
            return nil
        }
        var mirrors: [String] = []
        var valid = true
        while let item = next(), item.kind != .sequenceEnd {
            guard let text = string(item, key: "mirrors") else { valid = false; continue }
            if let problem = Self.mirrorProblem(text, prefixes: prefixes) {
                report(item, problem)
                valid = false
            }
            mirrors.append(text)
        }
        if valid, mirrors.isEmpty {
            report(start, "'mirrors' is empty")
            valid = false
        }
        return valid ? mirrors : nil
    }

    /// Why `text` cannot be a mirror: an absolute http(s) URL, or an `s3://` one (with its key,
    /// unless it is a prefix).
    static func mirrorProblem(_ text: String, prefixes: Bool) -> String? {
        if let problem = URLKinds.problem(prefix: text, what: "a mirror") { return problem }
        if !prefixes, let problem = URLKinds.kind(of: text)?.problem(entry: text) { return "a mirror: \(problem)" }
        return nil
    }

    /// The top-level `mirrors`: URL prefix → a mirror prefix or a list of them.
    mutating func readMirrorMap(_ start: YAMLEvent, into map: inout ManifestMirrors) {
        guard start.kind == .mappingStart else {
            report(start, "'mirrors' must be a mapping of URL prefixes to mirror prefixes, found \(Self.describe(start))")
            skip(after: start)
            return
        }
        var seen: [String: Int] = [:]
        while let key = next(), key.kind != .mappingEnd {
            guard let value = next() else { return }
            guard key.kind == .scalar, !key.isNull else {
                report(key, "mirror prefixes must be strings")
                skip(after: key)
                skip(after: value)
                continue
            }
            if let first = seen[key.value] { report(key, "duplicate mirror prefix (first at line \(first))") }
            seen[key.value] = key.line
            var valid = true
            if let problem = URLKinds.problem(prefix: key.value, what: "a mirrored prefix") {
                report(key, problem)
                valid = false
            }
            var mirrors: [String] = []
            if value.kind == .sequenceStart {
                guard let list = readMirrorList(value, prefixes: true) else { continue }
                mirrors = list
            } else if let text = string(value, key: "mirrors") {
                if let problem = URLKinds.problem(prefix: text, what: "a mirror") {
                    report(value, problem)
                    valid = false
                }
                mirrors = [text]
            } else {
                continue
            }
            if valid { map.append(key.value, mirrors) }
        }
    }
}
