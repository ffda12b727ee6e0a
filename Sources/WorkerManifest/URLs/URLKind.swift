/// The kinds of URL worker reads. A kind is one type (`HTTPKind`, `S3Kind`, `FileKind`): how its
/// URLs parse and are checked, where they connect, what an entry's tree path is; the fetch stage
/// adds how it is reached (`Locator`). Nothing outside the kinds tells a URL's kind by its text:
/// it asks `URLKinds`.
public protocol URLKind: Sendable {
    /// Which kind this is (a switch over it is how another layer gives a kind its own behaviour:
    /// the compiler names every switch a new kind must join).
    var id: URLKindID { get }
    /// The schemes it reads, lowercase.
    var schemes: [String] { get }
    /// What it may be written as besides an entry of a local manifest.
    var roles: URLRoles { get }
    /// Its paths are keys taken literally (S3): never percent-decoded, dot segments names.
    var literalPaths: Bool { get }
    /// Where `url` (of this kind) connects, and the rest after the authority (path, query,
    /// fragment; an S3 key with its leading `/`); nil when it cannot be parsed.
    func origin(of url: String) -> (origin: Origin, rest: Substring)?
    /// Why `url` cannot be an entry's URL, or nil.
    func problem(entry url: String) -> String?
    /// Why `prefix` cannot be a prefix of such URLs (`base_url`, a mirror or mirrored prefix,
    /// `--rewrite`'s FROM and TO), or nil.
    func problem(prefix: String) -> String?
    /// The tree path of an entry written as `written`: absolute, or relative to a `base_url` of
    /// this kind.
    func treePath(written: String) -> Result<String, TreePathProblem>
    /// What a refusal (400, 401, 403) of a request sent without credentials adds, for a kind
    /// whose requests carry the run's (`s3`: "unsigned: no AWS credentials were found"); nil for
    /// the rest.
    var sentWithoutCredentials: String? { get }
    /// The hash a URL of this kind names itself (an OCI blob's digest): it pins an entry without
    /// `hash:`, and one with `hash:` must agree. Nil for most kinds.
    func impliedHash(of url: String) -> ContentHash?
    /// Whether an entry written as `url` (`pinned`: with a `hash:`) stands for several files its
    /// origin names as a run starts (an OCI tag for its titled layers): the run asks the fetch
    /// stage for its parts (`Locator.parts`) before it plans. False for most kinds.
    func expands(_ url: String, pinned: Bool) -> Bool
    /// How a URL that stands for several files is written (`worker manifest URL` lists its
    /// parts); nil for a kind whose URLs never do.
    var expandedForm: String? { get }
}

extension URLKind {
    public func impliedHash(of url: String) -> ContentHash? { nil }
    public func expands(_ url: String, pinned: Bool) -> Bool { false }
    public var expandedForm: String? { nil }
    public var sentWithoutCredentials: String? { nil }
}

/// The kinds by name.
public enum URLKindID: Sendable, Hashable {
    case http, s3, file, oci
}

/// Where a kind of URL may be written.
public struct URLRoles: OptionSet, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// An entry's URL, a mirror, a mirrored prefix, `--rewrite`'s FROM and TO.
    public static let remote = URLRoles(rawValue: 1)
    /// A `base_url`.
    public static let base = URLRoles(rawValue: 2)
    /// A remote manifest (`worker sync URL`).
    public static let manifest = URLRoles(rawValue: 4)
    /// Signed with the run's credentials: its settings are read when a run has one.
    public static let signed = URLRoles(rawValue: 8)
    /// A folder of it can be listed into a manifest (`worker manifest URL`).
    public static let listable = URLRoles(rawValue: 16)
}

/// The registry: every kind, found by a URL's scheme.
public enum URLKinds {
    public static let http = HTTPKind()
    public static let s3 = S3Kind()
    public static let file = FileKind()
    public static let oci = OCIKind()
    public static let all: [any URLKind] = [http, s3, file, oci]

    /// The kind of `url` by its scheme; nil for a scheme no kind reads (or none).
    public static func kind(of url: String) -> (any URLKind)? {
        // Asked of every URL a run fetches: http(s) is told from the bytes without a scheme string.
        if HTTPKind.matches(url) { return http }
        guard let scheme = URLResolver.scheme(of: url) else { return nil }
        return kind(scheme: scheme)
    }

    /// The kind of the URL whose UTF-8 bytes are `utf8` (asked of every entry without making a
    /// string of it): each registered scheme compared with the bytes before the colon.
    public static func kind(utf8: UnsafeRawBufferPointer) -> (any URLKind)? {
        if HTTPKind.matches(bytes: utf8) { return http }
        for kind in all {
            for scheme in kind.schemes where scheme.utf8.count < utf8.count && utf8[scheme.utf8.count] == UInt8(ascii: ":") {
                if zip(scheme.utf8, utf8).allSatisfy({ $0 == $1 | 0x20 }) { return kind }
            }
        }
        return nil
    }

    /// The kind that reads `scheme` (lowercase).
    public static func kind(scheme: String) -> (any URLKind)? {
        all.first { $0.schemes.contains(scheme) }
    }

    /// Whether `url` is of a kind with `role` (signed, listable, a remote manifest).
    public static func has(_ role: URLRoles, _ url: String) -> Bool {
        kind(of: url)?.roles.contains(role) == true
    }

    /// `url` parsed: its kind, origin and rest; nil for a scheme no kind reads or a URL it cannot parse.
    public static func parse(_ url: String) -> ParsedURL? {
        guard let kind = kind(of: url), let (origin, rest) = kind.origin(of: url) else { return nil }
        return ParsedURL(text: url, kind: kind, origin: origin, rest: rest)
    }

    /// The schemes of the kinds with `role`, as a refusal lists them ("http, https and s3").
    public static func schemes(with role: URLRoles, joiner: String = "and") -> String {
        let names = all.filter { $0.roles.contains(role) }.flatMap(\.schemes)
        guard names.count > 1 else { return names.joined() }
        return names.dropLast().joined(separator: ", ") + " \(joiner) " + names[names.count - 1]
    }

    /// Why `text` cannot be a prefix of a kind with `role` (an unknown scheme, or its kind's own
    /// rule), said of `what`; nil when it can.
    public static func problem(prefix text: String, what: String, role: URLRoles = .remote) -> String? {
        guard let kind = kind(of: text), kind.roles.contains(role) else {
            return URLResolver.scheme(of: text).map {
                "\(what) has scheme '\(Redact.short($0))'; only \(schemes(with: role)) are allowed"
            } ?? "\(what) must be an absolute \(schemes(with: role, joiner: "or")) URL"
        }
        return kind.problem(prefix: text).map { "\(what)\($0.hasPrefix(":") ? "" : " ")\($0)" }
    }

    /// The hash `url` names itself, when its kind says one (an OCI blob's digest). An http(s) URL
    /// is told apart first: asked of every entry a manifest lists.
    public static func impliedHash(of url: String) -> ContentHash? {
        guard !HTTPKind.matches(url) else { return nil }
        return kind(of: url)?.impliedHash(of: url)
    }

    /// The tree path of an entry without `path`, written `written`, whose resolved URL is `resolved`.
    public static func treePath(written: String, resolved: String) -> Result<String, TreePathProblem> {
        (kind(of: resolved) ?? http).treePath(written: written)
    }
}

import WorkerSupport

extension Origin {
    /// The origin of `url` as its kind says; for a URL no kind parses, an origin of its own
    /// (credentials hidden) that no other URL shares: its request fails anyway.
    public static func of(_ url: String) -> Origin {
        URLKinds.parse(url)?.origin ?? Origin(scheme: "", host: url, port: nil, written: Redact.url(url))
    }
}
