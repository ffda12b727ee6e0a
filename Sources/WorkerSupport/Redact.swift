import FoundationEssentials
import Glibc

/// Turns values that may hold secrets into forms safe for output.
public enum Redact {
    /// The URL with any user info (`user:password@`) removed; everything else unchanged.
    public static func url(_ text: String) -> String {
        // Read as bytes (every report row's URL passes here): the delimiters are ASCII.
        let bytes = text.utf8
        guard let schemeEnd = bytes.indices.first(where: { bytes[$0...].starts(with: "://".utf8) }) else { return text }
        let afterScheme = bytes[bytes.index(schemeEnd, offsetBy: 3)...]
        let authorityEnd = afterScheme.firstIndex(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") })
            ?? afterScheme.endIndex
        guard let at = afterScheme[..<authorityEnd].lastIndex(of: UInt8(ascii: "@")) else { return text }
        return String(decoding: bytes[..<afterScheme.startIndex], as: UTF8.self)
            + String(decoding: afterScheme[afterScheme.index(after: at)...], as: UTF8.self)
    }

    /// A URL given by the user that may not parse, as it may be shown: everything between `://`
    /// and the last `@` anywhere in it is dropped (a password may hold `/`, `?` or `#`, which end
    /// the authority for `url(_:)`).
    public static func refusedURL(_ text: String) -> String {
        guard let schemeEnd = text.firstRange(of: "://"), let at = text.lastIndex(of: "@"), at > schemeEnd.upperBound
        else { return url(text) }
        return String(text[..<schemeEnd.upperBound]) + "…" + String(text[at...])
    }

    /// A bounded, printable excerpt of user input for an error message (`Sanitize.terminal`).
    package static func short(_ text: String, limit: Int = 40) -> String {
        Sanitize.terminal(text, limit: limit)
    }
}
