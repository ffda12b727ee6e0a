import WorkerManifest
import WorkerSupport

/// `--rewrite FROM=TO`: the operator's redirection of URLs (an internal mirror for air-gapped CI,
/// a proxy). A URL that starts with FROM is fetched from TO + the rest; FROM's host is never
/// contacted (redirects are rewritten too). What the cache records (the index, `path`, `get`,
/// reports) keeps the manifest's URL: only the request changes. The first matching rule wins.
public struct URLRewrite: Sendable, Equatable {
    public struct Rule: Sendable, Equatable {
        public let from: String
        public let to: String
        /// FROM's `scheme://authority`, lowercased (compared without case), and the rest.
        let authority: String
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
            guard let authority = Self.authority(of: from) else {
                return .failure(RewriteError("'\(Redact.refusedURL(text))': FROM is not a valid URL"))
            }
            rewrite.rules.append(Rule(from: from, to: to, authority: authority.lowercased(),
                                      path: from.dropFirst(authority.count)))
        }
        return .success(rewrite)
    }

    /// The URL to request for `url`: TO + the rest under the first rule whose FROM it starts
    /// with (scheme and host without case; a host is matched whole), else `url` itself.
    public func apply(_ url: String) -> String {
        guard !rules.isEmpty, let authority = Self.authority(of: url) else { return url }
        let lowered = authority.lowercased()
        let rest = url.dropFirst(authority.count)
        for rule in rules where rule.authority == lowered && rest.hasPrefix(rule.path) {
            return rule.to + rest.dropFirst(rule.path.count)
        }
        return url
    }

    /// `scheme://authority` of an absolute URL (up to the first `/`, `?` or `#` after `://`).
    static func authority(of url: String) -> Substring? {
        guard let schemeEnd = url.firstRange(of: "://") else { return nil }
        let after = url[schemeEnd.upperBound...]
        let end = after.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? after.endIndex
        guard end > after.startIndex else { return nil }
        return url[..<end]
    }
}

/// A `--rewrite` rule that cannot be used.
public struct RewriteError: Error, Sendable, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
