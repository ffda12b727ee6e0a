import WorkerManifest
import WorkerSupport

/// `sftp://[USER@]HOST[:PORT]/PATH` URLs: files on an SSH server, read with the run's SSH login
/// and checked host keys (`SFTPAccess`); paths percent-encoded as in http(s) URLs (`~` is the
/// user's home); a folder listable into a manifest.
public struct SFTPKind: URLKind {
    public var id: URLKindID { .sftp }
    public var schemes: [String] { Self.schemes }
    private static let schemes = ["sftp"]
    /// `.signed`: its login is read when a run has one of its URLs.
    public var roles: URLRoles { [.remote, .base, .signed, .listable] }
    public var literalPaths: Bool { false }

    /// Whether `text` starts with `sftp://` (any case).
    static func matches(_ text: some StringProtocol) -> Bool {
        text.utf8.count > 7 && text.prefix(7).lowercased() == "sftp://"
    }

    /// `sftp://host:port` (port 22 when absent; the host spelled as for http(s)), and the path.
    public func origin(of url: String) -> (origin: Origin, rest: Substring)? {
        guard Self.matches(url) else { return nil }
        let after = url.dropFirst(7)
        let end = after.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? after.endIndex
        var authority = after[..<end]
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        guard !authority.isEmpty, let parsed = Origin.http("http://" + authority) else { return nil }
        // A port follows the host, and an IPv6 host's brackets.
        let afterHost = authority.lastIndex(of: "]").map { authority[$0...] } ?? authority
        let hasPort = afterHost.contains(":")
        let port = hasPort ? parsed.origin.port : 22
        return (Origin(scheme: "sftp", host: parsed.origin.host, port: port, written: parsed.origin.hostAsWritten), after[end...])
    }

    public func problem(entry url: String) -> String? {
        guard let (_, rest) = origin(of: url) else { return "not a valid sftp:// URL (sftp://[USER@]HOST[:PORT]/PATH)" }
        if rest.contains("?") || rest.contains("#") { return "an sftp:// URL has no query or fragment" }
        if rest.isEmpty || rest.hasSuffix("/") { return "an sftp:// entry names a file, not a folder" }
        return nil
    }

    public func problem(prefix: String) -> String? {
        origin(of: prefix) == nil ? " is not a valid sftp:// URL" : nil
    }

    public var listedForm: String? { "sftp://[USER@]HOST[:PORT]/FOLDER/" }

    public func problem(folder: String) -> String? {
        guard let (_, rest) = origin(of: folder), rest.hasPrefix("/"), !rest.contains("?"), !rest.contains("#") else {
            return "a host, then the folder's path"
        }
        return nil
    }

    /// The path, percent-decoded, without the scheme and authority (as for http(s)).
    public func treePath(written: String) -> Result<String, TreePathProblem> {
        TreePath.derived(fromURL: written)
    }
}

extension URLKindID {
    public static let sftp = URLKindID("sftp")
}
