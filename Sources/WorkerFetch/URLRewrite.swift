import WorkerManifest
import WorkerSupport

/// `--rewrite FROM=TO`: the operator's redirection of URLs (an internal mirror for air-gapped CI,
/// a proxy). A URL under FROM is fetched from TO + the rest; FROM's host is never contacted
/// (redirects are rewritten too). "Under" compares where the URL connects (`ConnectOrigin`: every
/// spelling of FROM's scheme, host and port, user info apart) and FROM's path at a path-segment
/// boundary. FROM may be an `s3://BUCKET/PREFIX/` (its keys under it go to TO: another bucket,
/// signed as any, or an http(s) URL, unsigned, with the rest of the key percent-encoded). What
/// the cache records (the index, `path`, `get`, reports) keeps the manifest's URL: only the
/// request changes. The first matching rule wins.
public struct URLRewrite: Sendable, Equatable {
    public struct Rule: Sendable, Equatable {
        public let from: String
        public let to: String
        /// What FROM covers.
        let match: Match
    }

    /// An http(s) FROM: where it connects, and its path; an `s3://` FROM: its prefix (keys literal).
    enum Match: Sendable, Equatable {
        case origin(ConnectOrigin, path: Substring)
        case bucket(String)
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
        guard !rules.isEmpty else { return nil }
        if S3URL.isS3(url) {
            let spelled = "s3://" + url.dropFirst(5)
            return rules.firstIndex { rule in
                if case .bucket(let prefix) = rule.match { return ManifestMirrors.isUnder(spelled, prefix) }
                return false
            }
        }
        guard let (origin, rest) = ConnectOrigin.parse(url) else { return nil }
        return rules.firstIndex { rule in
            if case .origin(let from, let path) = rule.match { return from == origin && ManifestMirrors.isUnder(rest, path) }
            return false
        }
    }

    /// Whether a strict run may request `url` as it is (after the rules): it is where a rule's TO
    /// points, or on an allowed origin. (Not strict: always.)
    package func mayRequest(_ url: String) -> Bool {
        guard strict else { return true }
        guard let (origin, rest) = ConnectOrigin.parse(url) else { return false }
        if allowed.contains(origin) { return true }
        return rules.contains { rule in
            guard let (target, path) = ConnectOrigin.parse(rule.to) else { return false }
            return target == origin && ManifestMirrors.isUnder(rest, path)
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
                if let problem = ManifestMirrors.problem(value, what: side, s3: true) {
                    return .failure(RewriteError("'\(Redact.refusedURL(text))': \(problem)"))
                }
            }
            if S3URL.isS3(from) {
                rewrite.rules.append(Rule(from: from, to: to, match: .bucket("s3://" + from.dropFirst(5))))
                continue
            }
            guard !S3URL.isS3(to) else {
                return .failure(RewriteError("'\(Redact.refusedURL(text))': an http(s) FROM needs an http(s) TO"))
            }
            guard let (origin, path) = ConnectOrigin.parse(from) else {
                return .failure(RewriteError("'\(Redact.refusedURL(text))': FROM is not a valid URL"))
            }
            rewrite.rules.append(Rule(from: from, to: to, match: .origin(origin, path: path)))
        }
        return .success(rewrite)
    }

    /// The URL to request for `url`: TO + the rest under the first rule FROM it is under, else
    /// `url` itself.
    public func apply(_ url: String) -> String {
        guard let number = rule(for: url) else { return url }
        let rule = rules[number]
        switch rule.match {
        case .bucket(let prefix):
            let rest = url.dropFirst(prefix.count)
            return S3URL.isS3(rule.to) ? rule.to + rest : rule.to + S3URL.pathEncoded(rest)
        case .origin(_, let path):
            guard let (_, rest) = ConnectOrigin.parse(url) else { return url }
            return rule.to + rest.dropFirst(path.count)
        }
    }

}

/// A `--rewrite` rule that cannot be used.
public struct RewriteError: Error, Sendable, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
