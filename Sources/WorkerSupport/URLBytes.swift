/// A URL's parts found in its UTF-8 bytes, in place (every report row's URL is redacted, every
/// row key checked): the delimiters are ASCII.
package enum URLBytes {
    /// The user info: the bytes between the first `://` and the last `@` of the authority after
    /// it (which ends at the first `/`, `?` or `#`); nil when there is none.
    @inlinable
    package static func userInfo<Bytes: RandomAccessCollection<UInt8>>(in bytes: Bytes) -> Range<Int>? where Bytes.Index == Int {
        guard let start = authorityStart(bytes) else { return nil }
        var at: Int?
        var end = start
        while end < bytes.endIndex {
            let byte = bytes[end]
            if byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") { break }
            if byte == UInt8(ascii: "@") { at = end }
            end += 1
        }
        return at.map { start..<$0 }
    }

    /// Where the authority starts: just past the first `://`.
    @inlinable
    package static func authorityStart<Bytes: RandomAccessCollection<UInt8>>(_ bytes: Bytes) -> Int? where Bytes.Index == Int {
        var index = bytes.startIndex
        while index + 2 < bytes.endIndex {
            if bytes[index] == UInt8(ascii: ":"), bytes[index + 1] == UInt8(ascii: "/"), bytes[index + 2] == UInt8(ascii: "/") {
                return index + 3
            }
            index += 1
        }
        return nil
    }
}
