import Glibc

/// Where an http(s) URL connects, as libcurl connects: the scheme, the host and the port, each in
/// one spelling. User info is apart (it is not where a request goes); the host is percent-decoded,
/// lowercased and without a trailing dot; IPv4 in any form `inet_aton` takes (`127.1`, `0x7f.0.0.1`,
/// `2130706433`) is written dotted; IPv6 is written as `inet_ntop` writes it, an IPv4-mapped one as
/// its IPv4; `localhost`, its subdomains and the loopback addresses libcurl gives it (127.0.0.1,
/// ::1) are one host; the port is a number, a scheme's default when absent. Two URLs whose
/// `ConnectOrigin`s are equal reach the same server (`--rewrite` compares these).
package struct ConnectOrigin: Hashable, Sendable {
    package let scheme: String
    package let host: String
    package let port: Int

    /// The origin of an absolute http or https URL and where its authority ends; nil for another
    /// scheme, a port that is not a port, or a host that cannot be decoded.
    package static func parse(_ url: some StringProtocol) -> (origin: ConnectOrigin, rest: Substring)? {
        let text = Substring(url)
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
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            hostText = authority[authority.index(after: authority.startIndex)..<close]
            let tail = authority[authority.index(after: close)...]
            if !tail.isEmpty {
                guard tail.hasPrefix(":") else { return nil }
                portText = tail.dropFirst()
            }
            guard let host = Self.ipv6(hostText) else { return nil }
            return port(portText, default: defaultPort).map { (ConnectOrigin(scheme: scheme, host: host, port: $0), text[end...]) }
        }
        if let colon = authority.lastIndex(of: ":") {
            hostText = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            hostText = authority
        }
        guard let host = Self.host(hostText), let port = port(portText, default: defaultPort) else { return nil }
        return (ConnectOrigin(scheme: scheme, host: host, port: port), text[end...])
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
            let dotted = String(cString: buffer)
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
        return "[" + String(cString: buffer) + zone + "]"
    }
}
