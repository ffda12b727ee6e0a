import FoundationEssentials
import WorkerSupport

/// A manifest's `mirrors` mapping: URL prefixes and the prefixes of other servers holding the
/// same files. An entry pinned by a hash whose URL starts with a prefix may also be fetched from
/// each mirror prefix + the rest of its URL (after the entry's own `mirrors`).
public struct ManifestMirrors: Sendable, Equatable {
    public struct Prefix: Sendable, Equatable {
        public let prefix: String
        public let mirrors: [String]
    }

    public private(set) var prefixes: [Prefix] = []

    public init(_ prefixes: [Prefix] = []) {
        self.prefixes = prefixes
    }

    public var isEmpty: Bool { prefixes.isEmpty }

    /// The mirror URLs the map gives `url`, in the map's order. S3 keys are literal and URL
    /// paths are percent-encoded: the rest of an `s3://` URL is encoded for an http(s) mirror,
    /// and the rest of an http(s) URL decoded for an `s3://` one.
    public func mirrors(for url: String) -> [String] {
        var found: [String] = []
        let fromS3 = S3URL.isS3(url)
        for entry in prefixes where Self.isUnder(url, entry.prefix) {
            let rest = url.dropFirst(entry.prefix.count)
            for mirror in entry.mirrors {
                switch (fromS3, S3URL.isS3(mirror)) {
                case (true, false): found.append(mirror + S3URL.pathEncoded(rest))
                case (false, true):
                    guard let key = URLResolver.percentDecoded(rest) else { continue }
                    found.append(mirror + key)
                default: found.append(mirror + rest)
                }
            }
        }
        return found
    }

    /// Whether `url` starts with `prefix` at a path-segment boundary: the prefix ends with `/`, or
    /// the URL goes on with `/`, `?`, `#` or not at all (`http://cdn.test` is no prefix of
    /// `http://cdn.test.elsewhere.test/…`, nor `…/a` of `…/ab`).
    package static func isUnder(_ url: some StringProtocol, _ prefix: some StringProtocol) -> Bool {
        guard url.hasPrefix(prefix) else { return false }
        if prefix.hasSuffix("/") { return true }
        guard let next = url.utf8.dropFirst(prefix.utf8.count).first else { return true }
        return next == UInt8(ascii: "/") || next == UInt8(ascii: "?") || next == UInt8(ascii: "#")
    }

    mutating func append(_ prefix: String, _ mirrors: [String]) {
        prefixes.append(Prefix(prefix: prefix, mirrors: mirrors))
    }

    /// Why `text` cannot be a mirror (or a prefix of one), or nil: an absolute http or https URL
    /// with a host, or (`s3` true) an `s3://` URL of a bucket S3 accepts.
    package static func problem(_ text: String, what: String, s3: Bool = false) -> String? {
        if s3, S3URL.isS3(text) {
            let bucket = text.dropFirst("s3://".count).prefix { $0 != "/" }
            return S3URL.bucketProblem(String(bucket)).map { "\(what): \($0)" }
        }
        guard URLResolver.hasHTTPScheme(text) else {
            let scheme = URLResolver.scheme(of: text)
            let allowed = s3 ? "http, https and s3" : "http and https"
            return scheme.map { "\(what) has scheme '\(Redact.short($0))'; only \(allowed) are allowed" }
                ?? "\(what) must be an absolute \(s3 ? "http, https or s3" : "http or https") URL"
        }
        guard let parsed = URL(string: text), let host = parsed.host, !host.isEmpty else {
            return "\(what) is not a valid URL"
        }
        return nil
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
        if let problem = ManifestMirrors.problem(text, what: "a mirror", s3: true) { return problem }
        if !prefixes, S3URL.isS3(text), case .failure(let problem) = S3URL.parse(text) { return "a mirror: \(problem)" }
        return nil
    }

    /// The top-level `mirrors`: URL prefix → a mirror prefix or a list of them.
    mutating func readMirrorMap(_ start: YAMLEvent, into header: inout ManifestHeader) {
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
            if let problem = ManifestMirrors.problem(key.value, what: "a mirrored prefix", s3: true) {
                report(key, problem)
                valid = false
            }
            var mirrors: [String] = []
            if value.kind == .sequenceStart {
                guard let list = readMirrorList(value, prefixes: true) else { continue }
                mirrors = list
            } else if let text = string(value, key: "mirrors") {
                if let problem = ManifestMirrors.problem(text, what: "a mirror", s3: true) {
                    report(value, problem)
                    valid = false
                }
                mirrors = [text]
            } else {
                continue
            }
            if valid { header.mirrors.append(key.value, mirrors) }
        }
    }
}
