import FoundationEssentials
import Glibc

/// The few text operations worker needs beyond the standard library, written here so that the
/// program links FoundationEssentials only: Foundation brings CoreFoundation and ICU (a binary
/// twice the size and a slower start; docs/ARCHITECTURE.md).
public enum Text {
    /// `value` as C's printf formats it with `format` (one double: `%.2f`, `%g`).
    public static func format(_ format: String, _ value: Double) -> String {
        withVaList([value]) { arguments in
            var buffer = [CChar](repeating: 0, count: 64)
            let count = Int(vsnprintf(&buffer, buffer.count, format, arguments))
            if count >= buffer.count {
                buffer = [CChar](repeating: 0, count: count + 1)
                _ = withVaList([value]) { vsnprintf(&buffer, buffer.count, format, $0) }
            }
            return String(decoding: buffer.prefix(max(count, 0)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    /// `text` without leading and trailing spaces and tabs (Unicode space separators too), as
    /// Foundation's `trimmingCharacters(in: .whitespaces)`; line breaks are kept.
    public static func trimmingSpaces(_ text: some StringProtocol) -> String {
        let scalars = text.unicodeScalars
        func isSpace(_ scalar: Unicode.Scalar) -> Bool {
            scalar == "\t" || scalar.properties.generalCategory == .spaceSeparator
        }
        guard let first = scalars.firstIndex(where: { !isSpace($0) }) else { return "" }
        let last = scalars.lastIndex(where: { !isSpace($0) })!
        var out = ""
        out.unicodeScalars.append(contentsOf: scalars[first...last])
        return out
    }

    /// `text` with each Unicode scalar that `replacement` names replaced (by scalar, not by
    /// character: the line feed of a `\r\n` is found too).
    public static func escaping(_ text: String, _ replacement: (Unicode.Scalar) -> String?) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            if let replaced = replacement(scalar) { out += replaced } else { out.unicodeScalars.append(scalar) }
        }
        return out
    }

    /// `text` without leading and trailing white space, line breaks included.
    public static func trimmingWhitespace(_ text: some StringProtocol) -> String {
        guard let first = text.firstIndex(where: { !$0.isWhitespace }) else { return "" }
        let last = text.lastIndex(where: { !$0.isWhitespace })!
        return String(text[first...last])
    }
}

/// Path names as Foundation's NSString path methods treat them, for the cases worker has.
public enum PathName {
    /// The last component: `/a/b.png` → `b.png`, `/a/b/` → `b`, `/` → `/`.
    public static func lastComponent(_ path: String) -> String {
        let trimmed = trimmingTrailingSlashes(path)
        if trimmed == "/" || trimmed.isEmpty { return trimmed }
        return String(trimmed.split(separator: "/", omittingEmptySubsequences: false).last ?? "")
    }

    /// Without its last component: `/a/b` → `/a`, `/a` → `/`, `a` → ``.
    public static func parent(_ path: String) -> String {
        let trimmed = trimmingTrailingSlashes(path)
        guard let slash = trimmed.lastIndex(of: "/") else { return "" }
        let head = trimmingTrailingSlashes(String(trimmed[..<slash]))
        return head.isEmpty ? "/" : head
    }

    /// Without the last component's extension: `out/a.yaml` → `out/a`, `.hidden` stays.
    public static func deletingExtension(_ path: String) -> String {
        let name = lastComponent(path)
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return path }
        let cut = name.distance(from: dot, to: name.endIndex)
        let trimmed = trimmingTrailingSlashes(path)
        return String(trimmed.dropLast(cut))
    }

    private static func trimmingTrailingSlashes(_ path: String) -> String {
        var path = Substring(path)
        while path.count > 1, path.hasSuffix("/") { path = path.dropLast() }
        return String(path)
    }
}

/// An error as a short reason for a message: the system's words for a file system error
/// (`No such file or directory`), a message an error carries, or its description.
public enum ErrorText {
    public static func describe(_ error: any Error) -> String {
        if let error = error as? CocoaError {
            if let message = error.userInfo["NSLocalizedDescription"] as? String { return message }
            if let posix = error.underlying as? POSIXError { return String(cString: strerror(posix.code.rawValue)) }
        }
        if let posix = error as? POSIXError { return String(cString: strerror(posix.code.rawValue)) }
        return String(describing: error)
    }
}
