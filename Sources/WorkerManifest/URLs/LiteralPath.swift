import WorkerSupport

/// A kind's literal paths (`URLKind.literalPaths`: S3 keys, where `%20` is three characters and
/// `..` a name) written as URL paths, and values written into a query.
public enum LiteralPath {
    /// Part of a literal path as part of a URL path: an s3:// prefix mirrored by an http(s) one
    /// names the same object at the path that spells its key.
    public static func encoded(_ key: some StringProtocol) -> String {
        // S3 keys are literal: a `.` or `..` segment is a name, which libcurl (and every URL
        // parser) would otherwise remove with the segment before it — `a/../b` would fetch `b`,
        // and a path-style `BUCKET/../other/k` another bucket's key.
        if key.split(separator: "/", omittingEmptySubsequences: false).contains(where: { $0 == "." || $0 == ".." }) {
            return key.split(separator: "/", omittingEmptySubsequences: false).map { segment in
                segment == "." || segment == ".." ? String(repeating: "%2E", count: segment.count) : encoded(segment)
            }.joined(separator: "/")
        }
        return percentEncoded(key, keepingSlashes: true)
    }

    /// Every byte but S3's unreserved ones (and `/`, when `keepingSlashes`) as `%XX`: a key in a
    /// path, or any value in a query.
    public static func percentEncoded(_ text: some StringProtocol, keepingSlashes: Bool) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: "/") where keepingSlashes:
                out.unicodeScalars.append("/")
            default:
                out += "%" + Hex.encode([byte]).uppercased()
            }
        }
        return out
    }
}
