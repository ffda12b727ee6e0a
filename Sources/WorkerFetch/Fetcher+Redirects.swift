import FoundationEssentials
import Glibc
import WorkerSupport

/// The redirect rules the fetch stage applies itself (the client's own redirects are off): at
/// most `maxRedirects` hops, no loops, http and https only, never from https down to http; what
/// counts as the same origin (manifest headers never follow a redirect to another).
extension Fetcher {
    /// Where a redirect leads, or why it is refused: no Location, too many hops, a loop, a scheme
    /// other than http(s), or a downgrade from https to http.
    static func redirectTarget(from current: String, location: String?, status: Int, hop: Int, maxRedirects: Int,
                               visited: inout Set<String>) -> Result<String, FetchFailure> {
        guard let location, !location.isEmpty else {
            return .failure(FetchFailure(.redirect, "HTTP \(status) redirect without a Location"))
        }
        guard hop < maxRedirects else {
            return .failure(FetchFailure(.redirect, "more than \(maxRedirects) redirects"))
        }
        guard let base = URL(string: current), let target = URL(string: location, relativeTo: base)?.absoluteURL,
              let scheme = target.scheme?.lowercased()
        else {
            return .failure(FetchFailure(.redirect, "redirect to an invalid Location"))
        }
        guard scheme == "http" || scheme == "https" else {
            return .failure(FetchFailure(.scheme, "redirect to a '\(Redact.short(scheme))' URL refused (only http and https)"))
        }
        if base.scheme?.lowercased() == "https" && scheme == "http" {
            return .failure(FetchFailure(.redirect, "redirect from https to http refused"))
        }
        let next = target.absoluteString
        guard visited.insert(next).inserted else {
            return .failure(FetchFailure(.redirect, "redirect loop at \(Redact.url(next))"))
        }
        return .success(next)
    }

    /// scheme://host:port, lowercased: what "same origin" compares (and what the breaker and
    /// `--max-rps` count by). Asked for every request, so plain `http(s)://host[:port]/…` is read
    /// from the bytes; anything else (user info, IPv6, odd ports) goes through Foundation.
    package static func origin(of url: String) -> String {
        if let fast = plainOrigin(url) { return fast }
        return foundationOrigin(url)
    }

    static func plainOrigin(_ url: String) -> String? {
        let bytes = url.utf8
        let secure: Bool
        var start = bytes.startIndex
        func hasPrefix(_ prefix: String) -> Bool {
            bytes.count >= prefix.utf8.count && zip(bytes, prefix.utf8).allSatisfy { $0 | 0x20 == $1 | 0x20 }
        }
        if hasPrefix("http://") {
            secure = false
            start = bytes.index(start, offsetBy: 7)
        } else if hasPrefix("https://") {
            secure = true
            start = bytes.index(start, offsetBy: 8)
        } else {
            return nil
        }
        let end = bytes[start...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
            ?? bytes.endIndex
        let authority = bytes[start..<end]
        guard !authority.isEmpty, !authority.contains(where: { byte in
            byte == UInt8(ascii: "@") || byte == UInt8(ascii: "[") || byte == UInt8(ascii: "%") || byte >= 0x80
        }) else { return nil }
        var host = authority[...]
        var port = secure ? 443 : 80
        if let colon = authority.firstIndex(of: UInt8(ascii: ":")) {
            host = authority[..<colon]
            let digits = authority[authority.index(after: colon)...]
            guard !digits.isEmpty, digits.count <= 5, let number = Int(String(decoding: digits, as: UTF8.self)),
                  number <= 65535 else { return nil }
            port = number
        }
        guard !host.isEmpty else { return nil }
        // Written in one allocation: an origin is made for every entry a plan groups.
        let scheme = secure ? "https://" : "http://"
        let portText = String(port)
        return String(unsafeUninitializedCapacity: scheme.utf8.count + host.count + 1 + portText.utf8.count) { buffer in
            var count = 0
            func put(_ byte: UInt8) {
                buffer[count] = byte
                count += 1
            }
            scheme.utf8.forEach(put)
            host.forEach { put($0 >= 65 && $0 <= 90 ? $0 + 32 : $0) }
            put(UInt8(ascii: ":"))
            portText.utf8.forEach(put)
            return count
        }
    }

    static func foundationOrigin(_ url: String) -> String {
        guard let parsed = URL(string: url) else { return url }
        let scheme = parsed.scheme?.lowercased() ?? ""
        let port = parsed.port ?? (scheme == "https" ? 443 : 80)
        return "\(scheme)://\(parsed.host?.lowercased() ?? ""):\(port)"
    }
}
