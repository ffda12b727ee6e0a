import FoundationEssentials
import WorkerSupport

/// `http://` and `https://` URLs: entries, mirrors, base URLs and remote manifests; their paths
/// percent-encoded, their origin where libcurl connects (`Origin.http`).
public struct HTTPKind: URLKind {
    public var id: URLKindID { .http }
    public var schemes: [String] { Self.schemes }
    private static let schemes = ["http", "https"]
    public var roles: URLRoles { [.remote, .base, .manifest] }
    public var literalPaths: Bool { false }

    /// True when `text` starts with `http://` or `https://` (any case).
    public static func matches(_ text: String) -> Bool {
        // A native string's own bytes; a bridged one's through a copy.
        if let answer = text.utf8.withContiguousStorageIfAvailable({ matches(bytes: UnsafeRawBufferPointer($0)) }) {
            return answer
        }
        return Array(text.utf8.prefix(8)).withUnsafeBytes(matches(bytes:))
    }

    /// `matches` on a URL's bytes.
    public static func matches(bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count >= 7, bytes[0] | 0x20 == UInt8(ascii: "h"), bytes[1] | 0x20 == UInt8(ascii: "t"),
            bytes[2] | 0x20 == UInt8(ascii: "t"), bytes[3] | 0x20 == UInt8(ascii: "p")
        else { return false }
        let colon = bytes[4] | 0x20 == UInt8(ascii: "s") ? 5 : 4
        return bytes.count >= colon + 3 && bytes[colon] == UInt8(ascii: ":") && bytes[colon + 1] == UInt8(ascii: "/")
            && bytes[colon + 2] == UInt8(ascii: "/")
    }

    /// Whether going from a URL of scheme `from` to one of `to` (lowercase) leaves TLS: a redirect
    /// the fetch stage refuses.
    public static func isDowngrade(from: String, to: String) -> Bool {
        from == "https" && to == "http"
    }

    public func origin(of url: String) -> (origin: Origin, rest: Substring)? {
        Origin.http(url)
    }

    public func problem(entry url: String) -> String? {
        URLResolver.isWellFormedAbsolute(url) ? nil : "not a valid URL: \(Redact.short(Redact.url(url), limit: 80))"
    }

    public func problem(prefix: String) -> String? {
        guard let parsed = URL(string: prefix), let host = parsed.host, !host.isEmpty, Origin.http(prefix) != nil else {
            return " is not a valid URL"
        }
        return nil
    }

    /// The URL's path, percent-decoded, without scheme, authority, query or fragment.
    public func treePath(written: String) -> Result<String, TreePathProblem> {
        TreePath.derived(fromURL: written)
    }
}
