import FoundationEssentials
import Glibc

/// Turns values that may hold secrets into forms safe for output.
public enum Redact {
    /// The URL with any user info (`user:password@`) removed; everything else unchanged.
    public static func url(_ text: String) -> String {
        // Read as contiguous bytes (every report row's URL passes here): the delimiters are
        // ASCII, and most URLs have no user info, so they come back as they are.
        let found = text.utf8.withContiguousStorageIfAvailable { bytes in userInfo(in: bytes) }
        guard let found else { return url(bridged: text) }
        guard let (authority, at) = found else { return text }
        let bytes = Array(text.utf8)
        return String(decoding: bytes[..<authority] + bytes[(at + 1)...], as: UTF8.self)
    }

    /// Where the authority starts (after `://`) and the `@` that ends its user info, if it has one.
    private static func userInfo(in bytes: UnsafeBufferPointer<UInt8>) -> (authority: Int, at: Int)? {
        var index = 0
        while index + 2 < bytes.count {
            if bytes[index] == UInt8(ascii: ":"), bytes[index + 1] == UInt8(ascii: "/"), bytes[index + 2] == UInt8(ascii: "/") { break }
            index += 1
        }
        guard index + 2 < bytes.count else { return nil }
        let authority = index + 3
        var at: Int?
        var position = authority
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") { break }
            if byte == UInt8(ascii: "@") { at = position }
            position += 1
        }
        return at.map { (authority, $0) }
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
    package static func short(_ text: String, limit: Int = 40) -> String {
        Sanitize.terminal(text, limit: limit)
    }
}
