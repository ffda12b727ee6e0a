import WorkerManifest
import WorkerSupport

/// `--rewrite FROM=TO`: the operator's redirection of URLs (an internal mirror for air-gapped CI,
/// a proxy). A URL under FROM is fetched from TO + the rest; FROM's host is never contacted
/// (redirects are rewritten too). "Under" compares where the URL connects (`ConnectOrigin`: every
/// spelling of FROM's scheme, host and port, user info apart) and FROM's path at a path-segment
/// boundary. What the cache records (the index, `path`, `get`, reports) keeps the manifest's URL:
/// only the request changes. The first matching rule wins.
public struct URLRewrite: Sendable, Equatable {
    public struct Rule: Sendable, Equatable {
        public let from: String
        public let to: String
        /// Where FROM connects, and its path.
        let origin: ConnectOrigin
        let path: Substring
    }

    public private(set) var rules: [Rule] = []
    /// `--rewrite-strict`: every location a run requests must be under a rule or on an allowed
    /// origin (the air-gapped CI's guarantee); checked before any request, and at each redirect.
    public var strict = false
    /// `--allow-origin`: origins a strict run may reach without a rule (where TO points is one).
    package private(set) var allowed: Set<ConnectOrigin> = []

    public init() {}

    /// Allows `origins` (absolute http(s) URLs; only their scheme, host and port count) in a strict
    /// run; the error names the one that is not a URL.
    public mutating func allow(_ origins: [String]) -> RewriteError? {
        for text in origins {
            guard let (origin, _) = ConnectOrigin.parse(text) else {
                return RewriteError("--allow-origin '\(Redact.refusedURL(text))' is not an absolute http or https URL")
            }
            allowed.insert(origin)
        }
        return nil
    }

    /// The number of the first rule `url` is under, or nil.
    package func rule(for url: String) -> Int? {
        guard !rules.isEmpty, let (origin, rest) = ConnectOrigin.parse(url) else { return nil }
        return rules.firstIndex { $0.origin == origin && Self.isUnder(rest, $0.path) }
    }

    /// Whether a strict run may request `url` as it is (after the rules): it is where a rule's TO
    /// points, or on an allowed origin. (Not strict: always.)
    package func mayRequest(_ url: String) -> Bool {
        guard strict else { return true }
        guard let (origin, rest) = ConnectOrigin.parse(url) else { return false }
        if allowed.contains(origin) { return true }
        return rules.contains { rule in
            guard let (target, path) = ConnectOrigin.parse(rule.to) else { return false }
            return target == origin && Self.isUnder(rest, path)
        }
    }

    public var isEmpty: Bool { rules.isEmpty }

    /// Parses `FROM=TO` rules (both absolute http or https URLs with a host); the error names the
    /// rule and what is wrong.
    public static func parse(_ texts: [String]) -> Result<URLRewrite, RewriteError> {
        var rewrite = URLRewrite()
        for text in texts {
            guard let equals = text.firstIndex(of: "=") else {
                return .failure(RewriteError("'\(Redact.refusedURL(text))' is not FROM=TO"))
            }
            let from = String(text[..<equals])
            let to = String(text[text.index(after: equals)...])
            for (side, value) in [("FROM", from), ("TO", to)] {
                if let problem = ManifestMirrors.problem(value, what: side) {
                    return .failure(RewriteError("'\(Redact.refusedURL(text))': \(problem)"))
                }
            }
            guard let (origin, path) = ConnectOrigin.parse(from) else {
                return .failure(RewriteError("'\(Redact.refusedURL(text))': FROM is not a valid URL"))
            }
            rewrite.rules.append(Rule(from: from, to: to, origin: origin, path: path))
        }
        return .success(rewrite)
    }

    /// The URL to request for `url`: TO + the rest under the first rule FROM it is under, else
    /// `url` itself.
    public func apply(_ url: String) -> String {
        guard let number = rule(for: url), let (_, rest) = ConnectOrigin.parse(url) else { return url }
        let rule = rules[number]
        return rule.to + rest.dropFirst(rule.path.count)
    }

    /// Whether the path (and what follows) `rest` starts with `prefix` at a segment boundary.
    static func isUnder(_ rest: Substring, _ prefix: Substring) -> Bool {
        guard rest.hasPrefix(prefix) else { return false }
        if prefix.isEmpty || prefix.hasSuffix("/") { return true }
        guard let next = rest.utf8.dropFirst(prefix.utf8.count).first else { return true }
        return next == UInt8(ascii: "/") || next == UInt8(ascii: "?") || next == UInt8(ascii: "#")
    }
}

/// A `--rewrite` rule that cannot be used.
public struct RewriteError: Error, Sendable, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
