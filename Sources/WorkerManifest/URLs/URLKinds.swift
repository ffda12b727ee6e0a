import Synchronization
import WorkerSupport

/// The registry: every kind, found by a URL's scheme. http(s) and files are always known; the
/// other kinds are installed once as the program starts (`WorkerKinds.install()`), from above
/// the layers that ask.
public enum URLKinds {
    public static let http = HTTPKind()
    public static let file = FileKind()
    private static let installed = Mutex<[any URLKind]>([http, file])

    /// Every kind: http(s), files, then the installed ones in their order.
    public static var all: [any URLKind] { installed.withLock { $0 } }

    /// Makes `kinds` known beside http(s) and files (again: the same list, replaced).
    public static func install(_ kinds: [any URLKind]) {
        installed.withLock { $0 = [http, file] + kinds }
    }

    /// The kind of `url` by its scheme; nil for a scheme no kind reads (or none).
    public static func kind(of url: String) -> (any URLKind)? {
        // Asked of every URL a run fetches: http(s) is told from the bytes without a scheme string.
        if HTTPKind.matches(url) { return http }
        guard let scheme = scheme(of: url) else { return nil }
        return kind(scheme: scheme)
    }

    /// The kind of the URL whose UTF-8 bytes are `utf8` (asked of every entry without making a
    /// string of it): each registered scheme compared with the bytes before the colon.
    public static func kind(utf8: UnsafeRawBufferPointer) -> (any URLKind)? {
        if HTTPKind.matches(bytes: utf8) { return http }
        for kind in all where kind.id != .http {
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
            return scheme(of: text).map {
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

    /// The lowercased scheme when `text` starts with `scheme:` (RFC 3986: a letter, then letters,
    /// digits, `+`, `-`, `.`), else nil.
    public static func scheme(of text: String) -> String? {
        var text = text
        return text.withUTF8 { utf8 in
            // Read up to the colon, or to the first byte a scheme cannot hold (a relative path's
            // `/` ends it early).
            guard let first = utf8.first, isLetter(first) else { return nil }
            for index in 1..<utf8.count {
                let byte = utf8[index]
                if byte == UInt8(ascii: ":") {
                    return String(decoding: UnsafeBufferPointer(rebasing: utf8[..<index]), as: UTF8.self).lowercased()
                }
                guard isLetter(byte) || (48...57).contains(byte) || byte == 43 || byte == 45 || byte == 46 else { return nil }
            }
            return nil
        }
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (65...90).contains(byte) || (97...122).contains(byte)
    }
}

extension Origin {
    /// The origin of `url` as its kind says; for a URL no kind parses, an origin of its own
    /// (credentials hidden) that no other URL shares: its request fails anyway.
    public static func of(_ url: String) -> Origin {
        URLKinds.parse(url)?.origin ?? Origin(scheme: "", host: url, port: nil, written: Redact.url(url))
    }
}
