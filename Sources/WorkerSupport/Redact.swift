import FoundationEssentials
import Glibc

/// Turns values that may hold secrets into forms safe for output.
public enum Redact {
    /// The URL with any user info (`user:password@`) removed; everything else unchanged.
    public static func url(_ text: String) -> String {
        guard let schemeEnd = text.firstRange(of: "://") else { return text }
        let afterScheme = text[schemeEnd.upperBound...]
        let authorityEnd = afterScheme.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? afterScheme.endIndex
        let authority = afterScheme[..<authorityEnd]
        guard let at = authority.lastIndex(of: "@") else { return text }
        return String(text[..<schemeEnd.upperBound]) + String(afterScheme[afterScheme.index(after: at)...])
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
