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

    /// A bounded, printable excerpt of user input for an error message (`Sanitize.terminal`).
    package static func short(_ text: String, limit: Int = 40) -> String {
        Sanitize.terminal(text, limit: limit)
    }
}
