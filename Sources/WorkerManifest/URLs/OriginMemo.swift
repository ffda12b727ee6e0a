import Glibc

/// The origin of the http(s) URL read last, given again for a URL that starts with the same
/// scheme and authority, byte for byte, up to where its path, query or fragment starts: a
/// manifest lists most of its URLs on one origin in a row, and comparing those bytes costs a
/// tenth of reading them again (BENCHMARKS.md as of 278b2e0, "URLs as values"). The same text is the same origin, so
/// the answer is `Origin.of`'s, and the one object is shared (compared by identity). A value
/// kept by one loop, never shared between threads.
public struct OriginMemo {
    /// The URL read last, the length of its `scheme://authority` (user info and all, as
    /// written) in bytes, and its origin.
    private var last: (url: String, authority: Int, origin: Origin)?

    public init() {}

    /// `Origin.of(url)`.
    public mutating func origin(of url: String) -> Origin {
        if let last, Self.starts(url, with: last.url, authority: last.authority) { return last.origin }
        guard let parsed = URLKinds.parse(url) else { return Origin.of(url) }
        last =
            parsed.kind.id == .http
            ? (url, url.utf8.distance(from: url.utf8.startIndex, to: parsed.rest.startIndex), parsed.origin) : nil
        return parsed.origin
    }

    /// Whether `url`'s bytes are the first `authority` bytes of `known` and then `/`, `?`, `#` or
    /// nothing: the same authority, not a longer host or port.
    private static func starts(_ url: String, with known: String, authority count: Int) -> Bool {
        var (url, known) = (url, known)
        return known.withUTF8 { prefix in
            url.withUTF8 { bytes in
                guard count > 0, let base = bytes.baseAddress, let start = prefix.baseAddress, bytes.count >= count,
                    memcmp(base, start, count) == 0
                else { return false }
                guard bytes.count > count else { return true }
                let next = bytes[count]
                return next == UInt8(ascii: "/") || next == UInt8(ascii: "?") || next == UInt8(ascii: "#")
            }
        }
    }
}
