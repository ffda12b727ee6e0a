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

    public init() {}

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
        guard !rules.isEmpty, let (origin, rest) = ConnectOrigin.parse(url) else { return url }
        for rule in rules where rule.origin == origin && Self.isUnder(rest, rule.path) {
            return rule.to + rest.dropFirst(rule.path.count)
        }
        return url
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
