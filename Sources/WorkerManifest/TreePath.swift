import WorkerSupport

/// Where an entry appears in a tree of files at their names (`sync --tree`, `export --layout
/// tree`): its `path`, or else its URL's path, percent-decoded, without scheme, host, query or
/// fragment (a relative URL's as written, not resolved against `base_url`).
public enum TreePath {
    /// The longest name of one component, and of a whole path, in bytes (NAME_MAX; a portable
    /// PATH_MAX share that leaves room for the tree's own folder).
    static let maxComponent = 255
    static let maxPath = 1024

    /// Why `path` cannot be a tree path, or nil. (On its UTF-8 bytes: a manifest of a million
    /// entries checks a million paths.)
    public static func problem(_ path: String) -> String? {
        var bytes = path
        return bytes.withUTF8 { problem(bytes: $0, shown: path) }
    }

    private static func problem(bytes: UnsafeBufferPointer<UInt8>, shown path: String) -> String? {
        if bytes.isEmpty { return "the tree path is empty" }
        if bytes.count > maxPath { return "the tree path is \(bytes.count) bytes long (at most \(maxPath))" }
        if bytes[0] == slash { return "the tree path '\(Redact.short(path))' is absolute (it must be relative)" }
        var start = 0
        for end in 0...bytes.count {
            let byte = end < bytes.count ? bytes[end] : slash
            if byte < 0x20 || byte == 0x7f { return "the tree path '\(Redact.short(path))' contains a control character" }
            // U+FFFE and U+FFFF (EF BF BE, EF BF BF): noncharacters no YAML manifest can hold.
            if byte == 0xEF, end + 2 < bytes.count, bytes[end + 1] == 0xBF, bytes[end + 2] >= 0xBE {
                return "the tree path '\(Redact.short(path))' contains a noncharacter (U+FFFE or U+FFFF)"
            }
            guard byte == slash else { continue }
            let length = end - start
            if length == 0 { return "the tree path '\(Redact.short(path))' has an empty component ('//' or a trailing '/')" }
            if length <= 2, bytes[start] == dot, length == 1 || bytes[start + 1] == dot {
                return "the tree path '\(Redact.short(path))' has a '\(length == 1 ? "." : "..")' component"
            }
            if length > maxComponent {
                return "the tree path '\(Redact.short(path))' has a component of \(length) bytes (at most \(maxComponent))"
            }
            start = end + 1
        }
        return nil
    }

    private static let slash = UInt8(ascii: "/")
    private static let dot = UInt8(ascii: ".")

    /// The tree path of an entry without `path`, from its URL as written; or why there is none.
    public static func derived(fromURL url: String) -> Result<String, TreePathProblem> {
        let bytes = Array(url.utf8)
        var start = 0
        let end = bytes.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? bytes.count
        // Past the scheme and the authority (user info, host, port) of an absolute URL.
        if let colon = bytes[..<end].firstIndex(of: UInt8(ascii: ":")), colon + 2 < end,
            bytes[colon + 1] == slash, bytes[colon + 2] == slash
        {
            start = bytes[(colon + 3)..<end].firstIndex(of: slash) ?? end
        }
        while start < end, bytes[start] == slash { start += 1 }
        guard start < end, bytes[end - 1] != slash else {
            return .failure(TreePathProblem(message: "the URL's path is empty or ends in '/': give the entry a 'path' for the tree"))
        }
        guard let decoded = percentDecoded(bytes[start..<end]) else {
            return .failure(TreePathProblem(message: "the URL's path is not valid UTF-8 once percent-decoded: give the entry a 'path'"))
        }
        if let problem = problem(decoded) {
            return .failure(TreePathProblem(message: problem + " (from the URL; give the entry a 'path')"))
        }
        return .success(decoded)
    }

    /// An S3 key's tree path: the key itself (keys are literal: `a%20b.png` and `x?y` are names),
    /// checked as any tree path.
    public static func derived(fromLiteralPath key: String) -> Result<String, TreePathProblem> {
        guard !key.isEmpty, !key.hasSuffix("/") else {
            return .failure(TreePathProblem(message: "the S3 key is empty or ends in '/': give the entry a 'path' for the tree"))
        }
        if let problem = problem(key) { return .failure(TreePathProblem(message: problem + " (from the S3 key; give the entry a 'path')")) }
        return .success(key)
    }

    /// `%XX` decoded; nil when a `%` is not followed by two hex digits or the bytes are not UTF-8.
    static func percentDecoded(_ text: ArraySlice<UInt8>) -> String? {
        guard text.contains(UInt8(ascii: "%")) else { return String(decoding: text, as: UTF8.self) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.count)
        var index = text.startIndex
        while index < text.endIndex {
            let byte = text[index]
            index += 1
            guard byte == UInt8(ascii: "%") else { bytes.append(byte); continue }
            guard index + 1 < text.endIndex, let high = Hex.value(text[index]), let low = Hex.value(text[index + 1]) else {
                return nil
            }
            bytes.append(high << 4 | low)
            index += 2
        }
        return String(validating: bytes, as: UTF8.self)
    }
}

public struct TreePathProblem: Error, Sendable {
    public let message: String

    public init(message: String) { self.message = message }
}

/// One file of a tree: its path, and the entry (of `ManifestSet.entries`) whose content it holds.
public struct TreeEntry: Sendable, Equatable {
    public let path: String
    public let entry: Int
    public let manifest: Int
    public let line: Int
    public let column: Int
}
