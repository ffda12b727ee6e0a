/// HTTP field-name syntax (RFC 9110 token), and the fields a manifest may not set.
public enum HTTPToken {
    /// Why a request header is refused, or nil. Headers that change the representation would
    /// make the server send bytes other than the content (compressed, a range), which would then
    /// be stored or fail its hash; hop-by-hop and framing headers are the client's to send;
    /// conditional headers are what `--revalidate` sends itself.
    public static func refusal(forName name: String) -> String? {
        switch name.lowercased() {
        case "accept-encoding", "te":
            "it makes the server encode the body (compressed bytes would be stored as the content)"
        case "range", "if-range":
            "it asks for part of the body"
        case "if-none-match", "if-modified-since", "if-match", "if-unmodified-since":
            "conditional requests are made by worker itself (--revalidate)"
        case "host", "content-length", "transfer-encoding", "connection", "upgrade", "expect", "keep-alive",
            "proxy-connection", "trailer":
            "the HTTP client sets it"
        default:
            nil
        }
    }

    /// A byte RFC 9110 does not allow in a field value: controls other than horizontal tab.
    public static func isForbiddenInValue(_ byte: UInt8) -> Bool {
        (byte < 0x20 && byte != 0x09) || byte == 0x7f
    }

    /// Every byte of `value` ASCII and allowed in a field value. One call a value: a caller in
    /// another module asking `isForbiddenInValue` of each byte made a call per byte.
    public static func isASCIIFieldValue(_ value: String) -> Bool {
        var value = value
        // The contiguous bytes, not the UTF-8 view an index at a time (~25 instructions a byte).
        return value.withUTF8 { bytes in bytes.allSatisfy { $0 < 0x80 && !isForbiddenInValue($0) } }
    }

    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty
            && name.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"):
                    true
                default:
                    "!#$%&'*+-.^_`|~".utf8.contains(byte)
                }
            }
    }
}
