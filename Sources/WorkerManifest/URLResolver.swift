import FoundationEssentials
import Glibc
import WorkerSupport

/// Resolves entry URLs: absolute http(s) as written; relative ones against `base_url`, or, without
/// one, as local files inside the manifest's own folder.
public struct URLResolver {
    public struct Problem: Error { public let message: String }

    /// The manifest's folder, absolute, symlinks resolved.
    public let folder: String
    private(set) var base: String?
    private var baseURL: URL?
    /// `base` ends in `/` and has no query or fragment: a plain relative path resolves against it
    /// by appending (RFC 3986 §5.2), without Foundation's parse (a third of a warm run's time).
    private var baseAppends = false
    /// scheme://authority of `base`, for references that start with one `/`.
    private var baseOrigin: Substring?
    /// `base`'s kind takes paths literally (S3 keys under it are appended as written).
    private var baseIsLiteral = false
    private var baseKind: (any URLKind)?
    /// `base` passes `isWellFormedAbsolute`: then a reference `appendingResolution` takes (its
    /// characters checked there, the authority the base's) gives a well-formed URL without a
    /// second pass over the whole result.
    private var baseIsWellFormed = false

    public init(manifestPath: String) {
        let absolute = URL(fileURLWithPath: manifestPath).deletingLastPathComponent().standardizedFileURL.path
        folder = absolute.withCString { pointer in
            guard let real = realpath(pointer, nil) else { return absolute }
            defer { free(real) }
            return String(cString: real)
        }
    }

    /// Sets `base_url`; returns a problem message when it is not an absolute URL of a kind that
    /// may be one (http, https, s3).
    mutating func setBase(_ text: String) -> String? {
        if let problem = URLKinds.problem(prefix: text, what: "'base_url'", role: .base) { return problem }
        let kind = URLKinds.kind(of: text)
        let withSlash = text.hasSuffix("/") ? text : text + "/"
        guard let url = URL(string: withSlash), let host = url.host, !host.isEmpty else {
            return "'base_url' is not a valid URL"
        }
        base = withSlash
        baseURL = url
        baseIsLiteral = kind?.literalPaths == true
        baseKind = kind
        baseIsWellFormed = Self.isWellFormedAbsolute(withSlash)
        baseAppends = !withSlash.contains("?") && !withSlash.contains("#")
        if let authority = withSlash.firstRange(of: "://") {
            let rest = withSlash[authority.upperBound...]
            baseOrigin = withSlash[..<(rest.firstIndex(of: "/") ?? withSlash.endIndex)]
        }
        return nil
    }

    /// Resolution by appending, for the common case only: a reference that is a path without
    /// dot segments (`.`, `..`), without `:` in its first segment, not starting with `//`, and
    /// without `?`/`#` surprises in the base. Anything else goes through Foundation. The result
    /// is what RFC 3986 resolution gives (a test compares it with Foundation's).
    func appendingResolution(_ raw: String) -> String? {
        guard baseAppends, let base, !raw.isEmpty else { return nil }
        var reference = raw
        let simple = reference.withUTF8 { utf8 -> Bool in
            if utf8.count >= 2, utf8[0] == UInt8(ascii: "/"), utf8[1] == UInt8(ascii: "/") { return false }
            var segmentStart = 0
            var firstSegment = true
            var index = 0
            while index <= utf8.count {
                let byte = index < utf8.count ? utf8[index] : UInt8(ascii: "/")
                if byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") {
                    // The path ends here; its last segment must not be a dot segment either.
                    return !Self.isDotSegment(utf8, segmentStart, index)
                }
                if byte == UInt8(ascii: ":"), firstSegment { return false }
                if index < utf8.count {
                    // Only characters Foundation keeps as they are; anything it might encode or
                    // refuse takes the slow path, so both paths give the same answer.
                    switch byte {
                    case UInt8(ascii: "%"):
                        guard index + 2 < utf8.count, Hex.value(utf8[index + 1]) != nil, Hex.value(utf8[index + 2]) != nil
                        else { return false }
                    case UInt8(ascii: "\\"), UInt8(ascii: "\""), UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "{"),
                        UInt8(ascii: "}"), UInt8(ascii: "|"), UInt8(ascii: "^"), UInt8(ascii: "`"), UInt8(ascii: "["),
                        UInt8(ascii: "]"):
                        return false
                    case 0x21...0x7e:
                        break
                    default:
                        return false
                    }
                }
                if byte == UInt8(ascii: "/") {
                    if Self.isDotSegment(utf8, segmentStart, index) { return false }
                    if index > 0 { firstSegment = false }
                    segmentStart = index + 1
                }
                index += 1
            }
            return true
        }
        guard simple else { return nil }
        if raw.hasPrefix("/") {
            guard let baseOrigin else { return nil }
            return baseOrigin + raw
        }
        return base + raw
    }

    private static func isDotSegment(_ utf8: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> Bool {
        let length = end - start
        let dot = UInt8(ascii: ".")
        return (length == 1 && utf8[start] == dot) || (length == 2 && utf8[start] == dot && utf8[start + 1] == dot)
    }

    /// An absolute URL checked as every command checks one (a manifest entry, `get`, `manifest
    /// --urls`): of a kind an entry may be, and as its kind checks it. Nil when `raw` has no scheme
    /// (a relative reference).
    public static func absolute(_ raw: String) -> Result<String, Problem>? {
        guard let kind = URLKinds.kind(of: raw) else {
            guard let scheme = URLKinds.scheme(of: raw) else { return nil }
            return .failure(
                Problem(message: "URL scheme '\(Redact.short(scheme))' is not allowed (only \(URLKinds.schemes(with: .remote)))"))
        }
        if let problem = kind.problem(entry: raw) { return .failure(Problem(message: problem)) }
        return .success(raw)
    }

    func resolve(_ raw: String) -> Result<String, Problem> {
        if let absolute = Self.absolute(raw) { return absolute }
        if let base, baseIsLiteral, let baseKind {
            // A key under an s3:// base is appended as written (keys are literal).
            guard !raw.hasPrefix("/") else {
                return .failure(
                    Problem(message: "'\(Redact.short(raw))' under an \(baseKind.schemes[0]):// base_url must not start with '/'"))
            }
            if let problem = baseKind.problem(entry: base + raw) { return .failure(Problem(message: problem)) }
            return .success(base + raw)
        }
        if let baseURL {
            if let appended = appendingResolution(raw) {
                guard baseIsWellFormed else {
                    return .failure(Problem(message: "not a valid relative URL: \(Redact.short(raw, limit: 80))"))
                }
                return .success(appended)
            }
            // Check what resolution produced, not only its input: Foundation hands some malformed
            // references (`:x/y`) back unresolved.
            guard let resolved = URL(string: raw, relativeTo: baseURL)?.absoluteString,
                URLKinds.kind(of: resolved)?.id == .http, Self.isWellFormedAbsolute(resolved)
            else {
                return .failure(Problem(message: "not a valid relative URL: \(Redact.short(raw, limit: 80))"))
            }
            return .success(resolved)
        }
        return resolveLocal(raw)
    }

    private func resolveLocal(_ raw: String) -> Result<String, Problem> {
        guard !raw.hasPrefix("/"), !raw.contains("\0"), !raw.contains("\\") else {
            return .failure(
                Problem(message: "local path '\(Redact.short(raw))' must be relative to the manifest's folder (no base_url is set)"))
        }
        let pathPart = raw.split(separator: "?", maxSplits: 1).first.map(String.init) ?? raw
        var components: [Substring] = []
        for component in pathPart.split(separator: "/", omittingEmptySubsequences: true) {
            switch component {
            case ".": continue
            case "..":
                guard !components.isEmpty else {
                    return .failure(Problem(message: "local path '\(Redact.short(raw))' leaves the manifest's folder"))
                }
                components.removeLast()
            default: components.append(component)
            }
        }
        guard !components.isEmpty else {
            return .failure(Problem(message: "local path '\(Redact.short(raw))' names no file"))
        }
        let decoded = components.map { Self.percentDecoded($0) ?? String($0) }
        guard !decoded.contains(where: { $0.contains("/") || $0 == ".." }) else {
            return .failure(Problem(message: "local path '\(Redact.short(raw))' leaves the manifest's folder"))
        }
        return .success("file://" + folder + "/" + decoded.joined(separator: "/"))
    }

    /// `%XX` sequences decoded; nil when a `%` is not followed by two hex digits or the bytes
    /// are not UTF-8 (as Foundation's `removingPercentEncoding`).
    static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var utf8 = text.utf8[...]
        while let byte = utf8.popFirst() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = utf8.popFirst().flatMap(Hex.value), let low = utf8.popFirst().flatMap(Hex.value) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// A cheap check of an absolute http(s) URL, made once per entry instead of a full parse: a
    /// non-empty host after `://`, printable ASCII only (no space, quote, angle bracket or
    /// backslash), and every `%` followed by two hex digits.
    static func isWellFormedAbsolute(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { utf8 in
            guard let colon = utf8.firstIndex(of: UInt8(ascii: ":")),
                utf8.count > colon + 2, utf8[colon + 1] == UInt8(ascii: "/"), utf8[colon + 2] == UInt8(ascii: "/")
            else { return false }
            var hostLength = 0
            var index = colon + 3
            // The authority: userinfo@host:port, up to the path, query or fragment.
            while index < utf8.count, utf8[index] != UInt8(ascii: "/"), utf8[index] != UInt8(ascii: "?"),
                utf8[index] != UInt8(ascii: "#")
            {
                hostLength = utf8[index] == UInt8(ascii: "@") ? 0 : hostLength + 1
                index += 1
            }
            guard hostLength > 0, utf8[index - hostLength] != UInt8(ascii: ":") else { return false }
            index = 0
            while index < utf8.count {
                switch utf8[index] {
                case UInt8(ascii: "%"):
                    guard index + 2 < utf8.count, Hex.value(utf8[index + 1]) != nil, Hex.value(utf8[index + 2]) != nil
                    else { return false }
                    index += 3
                case UInt8(ascii: "\\"), UInt8(ascii: "\""), UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "{"),
                    UInt8(ascii: "}"), UInt8(ascii: "|"), UInt8(ascii: "^"), UInt8(ascii: "`"):
                    return false
                case 0x21...0x7e:
                    index += 1
                default:
                    return false
                }
            }
            return true
        }
    }
}
