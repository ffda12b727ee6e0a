/// Where an entry appears in a tree of files at their names (`sync --tree`, `export --layout
/// tree`): its `path`, or else its URL's path, percent-decoded, without scheme, host, query or
/// fragment (a relative URL's as written, not resolved against `base_url`).
public enum TreePath {
    /// The longest name of one component, and of a whole path, in bytes (NAME_MAX; a portable
    /// PATH_MAX share that leaves room for the tree's own folder).
    static let maxComponent = 255
    static let maxPath = 1024

    /// Why `path` cannot be a tree path, or nil.
    public static func problem(_ path: String) -> String? {
        let bytes = Array(path.utf8)
        if bytes.isEmpty { return "the tree path is empty" }
        if bytes.count > maxPath { return "the tree path is \(bytes.count) bytes long (at most \(maxPath))" }
        if bytes.first == UInt8(ascii: "/") { return "the tree path '\(Redact.short(path))' is absolute (it must be relative)" }
        if bytes.contains(where: { $0 < 0x20 || $0 == 0x7f }) {
            return "the tree path '\(Redact.short(path))' contains a control character"
        }
        for component in bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            switch component.count {
            case 0: return "the tree path '\(Redact.short(path))' has an empty component ('//' or a trailing '/')"
            case 1 where component.first == UInt8(ascii: "."),
                 2 where component.allSatisfy({ $0 == UInt8(ascii: ".") }):
                return "the tree path '\(Redact.short(path))' has a '\(String(decoding: component, as: UTF8.self))' component"
            case maxComponent + 1 ..< Int.max:
                return "the tree path '\(Redact.short(path))' has a component of \(component.count) bytes (at most \(maxComponent))"
            default: continue
            }
        }
        return nil
    }

    /// The tree path of an entry without `path`, from its URL as written; or why there is none.
    public static func derived(fromURL url: String) -> Result<String, TreePathProblem> {
        var rest = Substring(url)
        if let end = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) { rest = rest[..<end] }
        if let colon = rest.firstIndex(of: ":"), rest[colon...].hasPrefix("://") {
            // Past the scheme and the authority (user info, host, port).
            rest = rest[rest.index(colon, offsetBy: 3)...]
            rest = rest.firstIndex(of: "/").map { rest[$0...] } ?? ""
        }
        while rest.hasPrefix("/") { rest = rest.dropFirst() }
        guard !rest.isEmpty, !rest.hasSuffix("/") else {
            return .failure(TreePathProblem(message: "the URL's path is empty or ends in '/': give the entry a 'path' for the tree"))
        }
        guard let decoded = percentDecoded(rest) else {
            return .failure(TreePathProblem(message: "the URL's path is not valid UTF-8 once percent-decoded: give the entry a 'path'"))
        }
        if let problem = problem(decoded) { return .failure(TreePathProblem(message: problem + " (from the URL; give the entry a 'path')")) }
        return .success(decoded)
    }

    /// `%XX` decoded; nil when a `%` is not followed by two hex digits or the bytes are not UTF-8.
    static func percentDecoded(_ text: Substring) -> String? {
        guard text.contains("%") else { return String(text) }
        var bytes: [UInt8] = []
        var utf8 = text.utf8.makeIterator()
        while let byte = utf8.next() {
            guard byte == UInt8(ascii: "%") else { bytes.append(byte); continue }
            guard let high = utf8.next().flatMap(Hex.value), let low = utf8.next().flatMap(Hex.value) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }
}

public struct TreePathProblem: Error, Sendable {
    public let message: String
}

/// One file of a tree: its path, and the entry (of `ManifestSet.entries`) whose content it holds.
public struct TreeEntry: Sendable, Equatable {
    public let path: String
    public let entry: Int
    public let manifest: Int
    public let line: Int
    public let column: Int
}
