/// The `.` and `..` segments of an http(s) URL's path (RFC 3986 §5.2.4's remove_dot_segments):
/// libcurl removes them before it sends a request, and servers before they serve one, so a
/// rule that decides where a request may go looks at the path without them — what is checked is
/// what the server is asked for.
public enum DotSegments {
    /// `url` with its path's dot segments removed (the query and fragment as they are); `url`
    /// itself when its path has none.
    public static func removing(in url: String) -> String {
        guard let (start, end) = path(of: url) else { return url }
        let path = url[start..<end]
        guard path.contains("/.") else { return url }
        var output: [Substring] = []
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        for (index, segment) in zip(segments.indices, segments) {
            let last = index == segments.endIndex - 1
            switch segment {
            case ".":
                if last { output.append("") }
            case "..":
                if !output.isEmpty { output.removeLast() }
                if last { output.append("") }
            default:
                output.append(segment)
            }
        }
        return String(url[..<start]) + "/" + output.joined(separator: "/") + url[end...]
    }

    /// Whether `url`'s path has a segment that is a dot segment once percent-decoded (`%2e`,
    /// `.%2E`): libcurl sends it as it is, and a server may read it as `.` or `..`.
    public static func hasEncoded(in url: String) -> Bool {
        guard let (start, end) = path(of: url) else { return false }
        return url[start..<end].split(separator: "/").contains { segment in
            segment.contains("%") && (URLResolver.percentDecoded(segment) == "." || URLResolver.percentDecoded(segment) == "..")
        }
    }

    /// Where `url`'s path starts (its first `/` after the authority) and ends (`?`, `#` or the end).
    private static func path(of url: String) -> (String.Index, String.Index)? {
        guard let scheme = url.firstRange(of: "://") else { return nil }
        let afterAuthority = url[scheme.upperBound...]
        guard let start = afterAuthority.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }), url[start] == "/" else { return nil }
        let end = url[start...].firstIndex(where: { $0 == "?" || $0 == "#" }) ?? url.endIndex
        return (start, end)
    }
}
