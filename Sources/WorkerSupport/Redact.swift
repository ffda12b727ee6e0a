import FoundationEssentials
import Glibc

/// Turns values that may hold secrets into forms safe for output.
public enum Redact {
    /// The URL with any user info (`user:password@`) removed; everything else unchanged.
    public static func url(_ text: String) -> String {
        // Read as contiguous bytes (every report row's URL passes here): most URLs have no user
        // info, and come back as they are.
        let found = text.utf8.withContiguousStorageIfAvailable { URLBytes.userInfo(in: UnsafeRawBufferPointer($0)) }
        guard let found else { return url(bridged: text) }
        guard let userInfo = found else { return text }
        let bytes = Array(text.utf8)
        return String(decoding: bytes[..<userInfo.lowerBound] + bytes[(userInfo.upperBound + 1)...], as: UTF8.self)
    }

    /// `url(_:)` for a string whose bytes are not stored contiguously.
    private static func url(bridged text: String) -> String {
        var copy = text
        copy.makeContiguousUTF8()
        return url(copy)
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
    public static func short(_ text: String, limit: Int = 40) -> String {
        Sanitize.terminal(text, limit: limit)
    }
}
