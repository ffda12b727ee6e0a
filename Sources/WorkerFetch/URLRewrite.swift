import WorkerManifest
import WorkerSupport

/// `--rewrite FROM=TO`: the operator's redirection of URLs (an internal mirror for air-gapped CI,
/// a proxy). A URL under FROM is fetched from TO + the rest; FROM's host is never contacted
/// (redirects are rewritten too). "Under" compares where the URL connects (`Origin`: every
/// spelling of FROM's scheme, host and port, user info apart) and FROM's path at a path-segment
/// boundary. FROM may be an `s3://BUCKET/PREFIX/` (its keys under it go to TO: another bucket,
/// signed as any, or an http(s) URL, unsigned, with the rest of the key percent-encoded). What
/// the cache records (the index, `path`, `get`, reports) keeps the manifest's URL: only the
/// request changes. The first matching rule wins.
public struct URLRewrite: Sendable, Equatable {
    public struct Rule: Sendable, Equatable {
        public let from: String
        public let to: String
        /// FROM and TO parsed: what "under" compares.
        let fromURL: ParsedURL
        let toURL: ParsedURL

        public static func == (left: Rule, right: Rule) -> Bool {
            left.from == right.from && left.to == right.to
        }
    }

    public private(set) var rules: [Rule] = []
    /// `--rewrite-strict`: every location a run requests must be under a rule or on an allowed
    /// origin (the air-gapped CI's guarantee); checked before any request, and at each redirect.
    public var strict = false
    /// `--allow-origin`: origins a strict run may reach without a rule (where TO points is one).
    public private(set) var allowed: Set<Origin> = []

    public init() {}

    /// Allows `origins` (absolute http(s) URLs; only their scheme, host and port count) in a strict
    /// run; the error names the one that is not a URL.
    public mutating func allow(_ origins: [String]) -> RewriteError? {
        for text in origins {
            guard let parsed = URLKinds.parse(text), parsed.kind.id == .http else {
                return RewriteError("--allow-origin '\(Redact.refusedURL(text))' is not an absolute http or https URL")
            }
            allowed.insert(parsed.origin)
        }
        return nil
    }

    /// The number of the first rule `url` is under, or nil.
    public func rule(for url: String) -> Int? {
        guard !rules.isEmpty, let parsed = Self.parse(url) else { return nil }
        return rule(for: parsed)
    }

    /// `url` parsed as it is requested: an http(s) path without its dot segments (a rule's
    /// prefix is compared with what the server is asked for); a key of a kind with literal paths
    /// (S3) as it is.
    private static func parse(_ url: String) -> ParsedURL? {
        guard let parsed = URLKinds.parse(url) else { return nil }
        guard !parsed.kind.literalPaths else { return parsed }
        let requested = DotSegments.removing(in: url)
        return requested == url ? parsed : URLKinds.parse(requested)
    }

    private func rule(for url: ParsedURL) -> Int? {
        rules.firstIndex { url.isUnder($0.fromURL) }
    }

    /// Whether a strict run may request `url` as it is (after the rules): it is where a rule's TO
    /// points, or on an allowed origin. (Not strict: always.)
    public func mayRequest(_ url: String) -> Bool {
        guard strict else { return true }
        guard let parsed = Self.parse(url) else { return false }
        return allowed.contains(parsed.origin) || rules.contains { parsed.isUnder($0.toURL) }
    }

    public var isEmpty: Bool { rules.isEmpty }

    /// Parses `FROM=TO` rules (absolute URLs of kinds a manifest may list: http, https, or an
    /// `s3://BUCKET/PREFIX/`); the error names the rule and what is wrong.
    public static func parse(_ texts: [String]) -> Result<URLRewrite, RewriteError> {
        var rewrite = URLRewrite()
        for text in texts {
            guard let equals = text.firstIndex(of: "=") else {
                return .failure(RewriteError("'\(Redact.refusedURL(text))' is not FROM=TO"))
            }
            let from = String(text[..<equals])
            let to = String(text[text.index(after: equals)...])
            for (side, value) in [("FROM", from), ("TO", to)] {
                if let problem = URLKinds.problem(prefix: value, what: side) {
                    return .failure(RewriteError("'\(Redact.refusedURL(text))': \(problem)"))
                }
            }
            guard let fromURL = URLKinds.parse(from) else {
                return .failure(RewriteError("'\(Redact.refusedURL(text))': FROM is not a valid URL"))
            }
            guard let toURL = URLKinds.parse(to) else {
                return .failure(RewriteError("'\(Redact.refusedURL(text))': TO is not a valid URL"))
            }
            // An endpoint's URL is rewritten after its bucket's: a bucket as TO of an http(s) FROM
            // would loop.
            guard fromURL.kind.literalPaths || !toURL.kind.literalPaths else {
                return .failure(RewriteError("'\(Redact.refusedURL(text))': an http(s) FROM needs an http(s) TO"))
            }
            rewrite.rules.append(Rule(from: from, to: to, fromURL: fromURL, toURL: toURL))
        }
        return .success(rewrite)
    }

    /// The URL to request for `url`: TO + the rest under the first rule FROM it is under (an S3
    /// key percent-encoded for an http(s) TO), else `url` itself.
    public func apply(_ url: String) -> String {
        applied(url).url
    }

    /// `apply`, and the number of the rule that sent `url` elsewhere (nil: none did).
    func applied(_ url: String) -> (url: String, rule: Int?) {
        guard !rules.isEmpty, let parsed = Self.parse(url), let number = rule(for: parsed) else { return (url, nil) }
        return joined(parsed, under: number).map { ($0, number) } ?? (url, nil)
    }

    /// `url` sent where rule `number` sends it (the rule `applied` named for it).
    public func apply(_ url: String, rule number: Int) -> String {
        guard let parsed = Self.parse(url) else { return url }
        return joined(parsed, under: number) ?? url
    }

    private func joined(_ parsed: ParsedURL, under number: Int) -> String? {
        let rule = rules[number]
        return ParsedURL.joining(rule.to, of: rule.toURL.kind, parsed.rest(after: rule.fromURL), from: parsed.kind)
    }
}

/// A `--rewrite` rule that cannot be used.
public struct RewriteError: Error, Sendable, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
