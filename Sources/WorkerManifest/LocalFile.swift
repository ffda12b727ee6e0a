import FoundationEssentials
import Glibc

/// `file://` URLs: what a relative entry of a manifest without `base_url` resolves to. Never
/// written in a manifest (no role), never fetched over a network (no origin).
public struct FileKind: URLKind {
    public var id: URLKindID { .file }
    public var schemes: [String] { Self.schemes }
    private static let schemes = ["file"]
    public var roles: URLRoles { [] }
    public var literalPaths: Bool { false }

    public func origin(of url: String) -> (origin: Origin, rest: Substring)? { nil }

    public func problem(entry url: String) -> String? {
        "URL scheme 'file' is not allowed (only \(URLKinds.schemes(with: .remote)))"
    }

    public func problem(prefix: String) -> String? { " may not be a file:// URL" }

    public func treePath(written: String) -> Result<String, TreePathProblem> {
        TreePath.derived(fromURL: written)
    }
}

/// Local entries (`file://`, a relative URL without `base_url`): the one place the scheme is told,
/// and the rule that a file stays inside its manifest's folder. (`LocalFile.open`, in the fetch
/// stage, opens one.)
public enum LocalFile {
    /// Whether `url` names a local file (`file://`). (The one place the scheme is told.)
    public static func isLocal(_ url: String) -> Bool {
        url.hasPrefix("file://")
    }

    /// The path a `file://` URL names; nil for any other URL.
    public static func path(of url: String) -> String? {
        isLocal(url) ? String(url.dropFirst("file://".count)) : nil
    }

    /// Whether `path` is `root` or below it (`/` holds everything).
    public static func isInside(_ path: String, _ root: String) -> Bool {
        root == "/" || path.hasPrefix(root.hasSuffix("/") ? root : root + "/")
    }
}
