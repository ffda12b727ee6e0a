import Glibc

/// The origin of the http(s) URL read last, given again for a URL that starts with the same
/// scheme and authority, byte for byte, up to where its path, query or fragment starts: a
/// manifest lists most of its URLs on one origin in a row, and comparing those bytes costs a
/// tenth of reading them again (BENCHMARKS.md, issue 61). The same text is the same origin, so
/// the answer is `Origin.of`'s, and the one object is shared (compared by identity). A value
/// kept by one loop, never shared between threads.
public struct OriginMemo {
    /// `scheme://authority` of the URL read last (user info and all, as written).
    private var prefix: [UInt8] = []
    private var last: Origin?

    public init() {}

    /// `Origin.of(url)`.
    public mutating func origin(of url: String) -> Origin {
        if let last, Self.starts(url, with: prefix) { return last }
        guard let parsed = URLKinds.parse(url) else { return Origin.of(url) }
        if parsed.kind.id == .http {
            prefix = Array(url.utf8[..<parsed.rest.startIndex])
            last = parsed.origin
        } else {
            (prefix, last) = ([], nil)
        }
        return parsed.origin
    }

    /// Whether `url`'s bytes are `prefix` and then `/`, `?`, `#` or nothing: the same authority,
    /// not a longer host or port.
    private static func starts(_ url: String, with prefix: [UInt8]) -> Bool {
        var url = url
        return url.withUTF8 { bytes in
            guard !prefix.isEmpty, bytes.count >= prefix.count,
                  prefix.withUnsafeBytes({ memcmp($0.baseAddress!, bytes.baseAddress!, prefix.count) }) == 0
            else { return false }
            guard bytes.count > prefix.count else { return true }
            let next = bytes[prefix.count]
            return next == UInt8(ascii: "/") || next == UInt8(ascii: "?") || next == UInt8(ascii: "#")
        }
    }
}
