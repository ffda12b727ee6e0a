import Glibc

/// Where a URL connects: its kind's scheme, the host and the port, each in one spelling, so two
/// spellings libcurl connects to alike are one origin. Every per-origin rule compares these: the
/// breaker, the window, `--max-rps`, failure counts, `--rewrite` and the mirrors map, and which
/// headers go where. Made once per URL (`ParsedURL`) and carried with its request.
///
/// For http(s): user info is apart (it is not where a request goes); the host is percent-decoded,
/// lowercased and without a trailing dot; IPv4 in any form `inet_aton` takes (`127.1`,
/// `0x7f.0.0.1`, `2130706433`) is dotted; IPv6 is as `inet_ntop` writes it, an IPv4-mapped one as
/// its IPv4; `localhost`, its subdomains and the loopback addresses libcurl gives it (127.0.0.1,
/// ::1) are one host; the port is a number, the scheme's default when absent. A kind without
/// hosts (`s3://BUCKET`) names its origin its own way (`S3URL`).
///
/// A class: made once per URL and shared by every request and table that carries it (a copy is
/// one reference, and two requests of one group compare by identity first).
public final class Origin: Hashable, Sendable, CustomStringConvertible {
    /// The scheme as the kind names it (`https`, `s3`): `http` and `https` differ.
    public let scheme: String
    /// The host in its one spelling (a bucket for `s3`).
    public let host: String
    /// The port; nil for a kind without ports (`s3`).
    public let port: Int?
    /// The host as written (lowercased, without user info), for `name`.
    private let written: String
    /// Host and port hashed once: the per-origin tables look an origin up for every request.
    private let hashed: Int

    /// The origin as reports and logs name it: `scheme://host:port` with the host as written, or
    /// `s3://BUCKET`.
    public var name: String {
        scheme.isEmpty ? written : scheme + "://" + written + (port.map { ":" + String($0) } ?? "")
    }

    public var description: String { name }

    /// The host as the URL spells it (lowercased, without user info or port).
    public var hostAsWritten: String { written }

    /// `written`: the host as the URL spells it (its name shows it); with an empty scheme, the
    /// whole name of a URL no kind reads.
    public init(scheme: String, host: String, port: Int?, written: String) {
        self.scheme = scheme
        self.host = host
        self.port = port
        self.written = written
        var hasher = Hasher()
        // The scheme seldom tells two origins apart (`==` still compares it).
        hasher.combine(host)
        hasher.combine(port ?? -1)
        hashed = hasher.finalize()
    }

    public static func == (left: Origin, right: Origin) -> Bool {
        left === right
            || (left.hashed == right.hashed && left.port == right.port && left.host == right.host && left.scheme == right.scheme)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(hashed)
    }

    /// The origin of an absolute http or https URL and where its authority ends (the rest: path,
    /// query, fragment); nil for another scheme, a port that is not a port, or a host that cannot
    /// be decoded.
    public static func http(_ url: some StringProtocol) -> (origin: Origin, rest: Substring)? {
        let text = Substring(url)
        if let plain = plain(text) { return plain }
        guard let separator = text.firstRange(of: "://") else { return nil }
        let scheme = text[..<separator.lowerBound].lowercased()
        let defaultPort: Int
        switch scheme {
        case "http": defaultPort = 80
        case "https": defaultPort = 443
        default: return nil
        }
        let after = text[separator.upperBound...]
        let end = after.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" || $0 == "\\" } ?? after.endIndex
        var authority = after[..<end]
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        var hostText: Substring
        var portText: Substring?
        let host: String
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            hostText = authority[authority.index(after: authority.startIndex)..<close]
            let tail = authority[authority.index(after: close)...]
            if !tail.isEmpty {
                guard tail.hasPrefix(":") else { return nil }
                portText = tail.dropFirst()
            }
            guard let address = Self.ipv6(hostText) else { return nil }
            host = address
            hostText = authority[..<authority.index(after: close)]
        } else {
            if let colon = authority.lastIndex(of: ":") {
                hostText = authority[..<colon]
                portText = authority[authority.index(after: colon)...]
            } else {
                hostText = authority
            }
            guard !hostText.contains(":"), let name = Self.host(hostText) else { return nil }
            host = name
        }
        guard let port = port(portText, default: defaultPort) else { return nil }
        return (Origin(scheme: scheme, host: host, port: port, written: hostText.lowercased()), text[end...])
    }

    /// The common spelling read from the bytes: `http(s)://host[:port]` with a host of letters,
    /// digits, `-` and `.` (a name, or an IPv4 address already in dotted decimal). Nil for
    /// anything else, which the general reading takes.
    private static func plain(_ text: Substring) -> (origin: Origin, rest: Substring)? {
        var text = text
        // The bytes themselves (a native string's are contiguous): asked for every URL a plan
        // groups, where walking a substring's UTF-8 view index by index costs more than the rest.
        guard let (origin, restOffset) = text.withUTF8(plainOrigin) else { return nil }
        return (origin, text[text.utf8.index(text.utf8.startIndex, offsetBy: restOffset)...])
    }

    private static func plainOrigin(_ bytes: UnsafeBufferPointer<UInt8>) -> (Origin, rest: Int)? {
        func lower(_ offset: Int) -> UInt8 { bytes[offset] | 0x20 }
        guard bytes.count > 7, lower(0) == UInt8(ascii: "h"), lower(1) == UInt8(ascii: "t"), lower(2) == UInt8(ascii: "t"),
            lower(3) == UInt8(ascii: "p")
        else { return nil }
        let secure = lower(4) == UInt8(ascii: "s")
        var index = secure ? 5 : 4
        guard bytes.count > index + 3, bytes[index] == UInt8(ascii: ":"), bytes[index + 1] == UInt8(ascii: "/"),
            bytes[index + 2] == UInt8(ascii: "/")
        else { return nil }
        index += 3
        let hostStart = index
        // A letter inet_aton never reads (not a hex digit nor `x`), or `-`: a name, never an
        // address. Without one, the host must already be dotted decimal as inet_ntop writes it
        // (four parts, no leading zeros, each at most 255): `127.1`, `0x7f.1` and names of hex
        // letters take the general reading.
        var (named, letters, upper) = (false, false, false)
        var (dots, part, partLength, leadingZero, quad) = (0, 0, 0, false, true)
        var hostEnd: Int?
        var port = secure ? 443 : 80
        var digits = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") { break }
            if hostEnd == nil {
                switch byte {
                case UInt8(ascii: "-"): named = true
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"):
                    letters = true
                    if byte < UInt8(ascii: "a") { upper = true }
                    let lower = byte | 0x20
                    if lower > UInt8(ascii: "f"), lower != UInt8(ascii: "x") { named = true }
                case UInt8(ascii: "0")...UInt8(ascii: "9"):
                    if partLength == 0 { leadingZero = byte == UInt8(ascii: "0") } else if leadingZero { quad = false }
                    part = part * 10 + Int(byte - 48)
                    partLength += 1
                    if partLength > 3 || part > 255 { quad = false }
                case UInt8(ascii: "."):
                    if partLength == 0 { quad = false }
                    (dots, part, partLength) = (dots + 1, 0, 0)
                case UInt8(ascii: ":"):
                    hostEnd = index
                    port = 0
                default: return nil
                }
            } else {
                guard byte >= 48, byte <= 57, digits < 5 else { return nil }
                port = port * 10 + Int(byte - 48)
                digits += 1
            }
            index += 1
        }
        let end = hostEnd ?? index
        guard end > hostStart, hostEnd == nil || digits > 0, port <= 65535,
            bytes[hostStart] != UInt8(ascii: "."), bytes[end - 1] != UInt8(ascii: ".")
        else { return nil }
        let hostBytes = UnsafeBufferPointer(rebasing: bytes[hostStart..<end])
        let written =
            upper
            ? String(decoding: hostBytes.map { $0 | ($0 >= 65 && $0 <= 90 ? 0x20 : 0) }, as: UTF8.self)
            : String(decoding: hostBytes, as: UTF8.self)
        var host = written
        if !named {
            guard !letters, quad, dots == 3, partLength > 0 else { return nil }
            if written == "127.0.0.1" { host = "localhost" }
        } else if written == "localhost" || written.hasSuffix(".localhost") {
            host = "localhost"
        }
        return (Origin(scheme: secure ? "https" : "http", host: host, port: port, written: written), index)
    }

    /// A port: digits (leading zeros allowed), at most 65535; empty or absent is the default.
    private static func port(_ text: Substring?, default value: Int) -> Int? {
        guard let text, !text.isEmpty else { return value }
        guard text.utf8.count <= 16, text.utf8.allSatisfy({ (48...57).contains($0) }), let number = Int(text), number <= 65535
        else { return nil }
        return number
    }

    /// A registered name or an IPv4 address, in one spelling.
    private static func host(_ text: Substring) -> String? {
        guard var name = URLResolver.percentDecoded(text)?.lowercased(), !name.isEmpty else { return nil }
        if name.hasSuffix(".") { name.removeLast() }
        guard !name.isEmpty else { return nil }
        if name == "localhost" || name.hasSuffix(".localhost") { return "localhost" }
        var address = in_addr()
        if inet_aton(name, &address) != 0 {
            var buffer = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            guard inet_ntop(AF_INET, &address, &buffer, socklen_t(buffer.count)) != nil else { return nil }
            let dotted = Self.text(buffer)
            return dotted == "127.0.0.1" ? "localhost" : dotted
        }
        return name
    }

    /// An IPv6 address (inside brackets) in `inet_ntop`'s spelling, an IPv4-mapped one as IPv4.
    private static func ipv6(_ text: Substring) -> String? {
        // A zone (`%25eth0`) names an interface, not another server: kept as written.
        let zone = text.firstRange(of: "%25").map { String(text[$0.lowerBound...]).lowercased() } ?? ""
        let address = text.firstRange(of: "%25").map { text[..<$0.lowerBound] } ?? text
        var bytes = in6_addr()
        guard inet_pton(AF_INET6, String(address), &bytes) == 1 else { return nil }
        let raw = withUnsafeBytes(of: bytes) { Array($0) }
        if raw[0..<10].allSatisfy({ $0 == 0 }), raw[10] == 0xff, raw[11] == 0xff {
            let dotted = raw[12..<16].map(String.init).joined(separator: ".")
            return dotted == "127.0.0.1" ? "localhost" : dotted
        }
        if raw[0..<15].allSatisfy({ $0 == 0 }), raw[15] == 1, zone.isEmpty { return "localhost" }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &bytes, &buffer, socklen_t(buffer.count)) != nil else { return nil }
        return "[" + Self.text(buffer) + zone + "]"
    }

    /// A C string `inet_ntop` wrote, up to its NUL.
    private static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
