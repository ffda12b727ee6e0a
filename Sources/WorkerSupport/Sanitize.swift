/// Text from manifests, servers and cache files made safe for the kind of output it goes to: one
/// function per kind, used everywhere that kind is written. A manifest `name`, a server's header
/// or a lock file's contents must not move a terminal's cursor, add a link or an image to a CI
/// page, or make a report invalid.
public enum Sanitize {
    /// For a terminal, one line: every control character (C0, DEL, C1), line and paragraph
    /// separator and bidirectional override becomes `?`; longer than `limit` characters, cut
    /// with `…`.
    public static func terminal(_ text: some StringProtocol, limit: Int? = nil) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            if isUnsafeForTerminal(scalar) { out += "?" } else { out.unicodeScalars.append(scalar) }
        }
        guard let limit, out.count > limit else { return out }
        return String(out.prefix(limit)) + "…"
    }

    /// For a terminal, several lines: as `terminal`, but line feeds and tabs stay.
    public static func terminalLines(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0 != "\n" && $0 != "\t" && isUnsafeForTerminal($0) }) else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            if scalar != "\n", scalar != "\t", isUnsafeForTerminal(scalar) { out += "?" } else { out.unicodeScalars.append(scalar) }
        }
        return out
    }

    /// For Markdown (a table cell or a heading, GitHub's step summary): one line, every character
    /// Markdown or its inline HTML gives a meaning to escaped with a backslash, so the text shows
    /// as written and never becomes a link, an image, a tag, math or a table column. (A bare
    /// http(s) URL may still be shown as a link to itself: GitHub's autolinks.)
    public static func markdown(_ text: some StringProtocol) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            if scalar == "\n" || scalar == "\r" || scalar == "\t" {
                out += " "
            } else if isUnsafeForTerminal(scalar) {
                out += "?"
            } else if markdownSpecials.contains(scalar) {
                out += "\\"
                out.unicodeScalars.append(scalar)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    private static let markdownSpecials: Set<Unicode.Scalar> = [
        "\\", "`", "*", "_", "{", "}", "[", "]", "<", ">", "(", ")", "#", "+", "!", "|", "~", "&", "$",
    ]

    /// For HTML and XML (the HTML report, JUnit): the five markup characters as entities, and the
    /// characters XML 1.0 does not allow or discourages (C0 but tab and line breaks, DEL, C1,
    /// U+FFFE, U+FFFF) as `?`.
    public static func markup(_ text: some StringProtocol) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            case "\t", "\n", "\r": out.unicodeScalars.append(scalar)
            default:
                let value = scalar.value
                if value < 0x20 || (0x7f...0x9f).contains(value) || value == 0xfffe || value == 0xffff {
                    out += "?"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }

    /// C0, DEL and C1 controls, the Unicode line and paragraph separators, and the bidirectional
    /// embeddings, overrides and isolates (which reorder what a terminal shows).
    public static func isUnsafeForTerminal(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        return value < 0x20 || (0x7f...0x9f).contains(value) || value == 0x2028 || value == 0x2029
            || (0x202a...0x202e).contains(value) || (0x2066...0x2069).contains(value) || value == 0x200e || value == 0x200f
            || value == 0x061c
    }
}
