/// A URL's parts found in its UTF-8 bytes, in place: every report row's URL is redacted, every
/// request's checked for credentials. The delimiters are ASCII. One function over raw bytes for
/// every caller, not a generic one: called from another module, a generic ran unspecialized.
public enum URLBytes {
    /// The user info: the bytes between the first `://` and the last `@` of the authority after
    /// it (which ends at the first `/`, `?` or `#`); nil when there is none.
    public static func userInfo(in bytes: UnsafeRawBufferPointer) -> Range<Int>? {
        guard let start = authorityStart(bytes) else { return nil }
        var at: Int?
        var end = start
        while end < bytes.count {
            let byte = bytes[end]
            if byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") { break }
            if byte == UInt8(ascii: "@") { at = end }
            end += 1
        }
        return at.map { start..<$0 }
    }

    /// Where the authority starts: just past the first `://`.
    private static func authorityStart(_ bytes: UnsafeRawBufferPointer) -> Int? {
        var index = 0
        while index + 2 < bytes.count {
            if bytes[index] == UInt8(ascii: ":"), bytes[index + 1] == UInt8(ascii: "/"), bytes[index + 2] == UInt8(ascii: "/") {
                return index + 3
            }
            index += 1
        }
        return nil
    }
}
