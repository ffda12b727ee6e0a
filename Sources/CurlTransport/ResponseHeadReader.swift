import WorkerFetch

/// A response's head as libcurl hands it over, a line at a time: the status line's version and
/// code, and the headers the response handler reads (and Connection), kept without making a
/// String for the others. An informational (1xx) head is read and dropped.
struct ResponseHeadReader {
    private(set) var status = 0
    private(set) var version = (major: 1, minor: 1)
    private var headers: [(name: String, value: String)] = []
    /// The final head has ended (its blank line came).
    private(set) var isDone = false

    /// The headers read from a response (the handler's, and Connection), with their bytes.
    private static let keptHeaders = (ResponseHandler.headerNames + ["connection"]).map { (name: $0, bytes: Array($0.utf8)) }

    /// Takes one line as libcurl hands it over (its line end included); true when it is the
    /// blank line that ends the final head. Lines after that (trailers) are not read.
    mutating func takeLine(_ line: UnsafeRawBufferPointer) -> Bool {
        guard !isDone else { return false }
        var end = line.count
        while end > 0, line[end - 1] == UInt8(ascii: "\n") || line[end - 1] == UInt8(ascii: "\r") { end -= 1 }
        return take(UnsafeRawBufferPointer(rebasing: line[0..<end]))
    }

    /// Takes one line without its line end; true when it is the blank line that ends the final
    /// head.
    mutating func take(_ text: UnsafeRawBufferPointer) -> Bool {
        if text.isEmpty {
            guard status >= 200 else {
                headers.removeAll()
                return false
            }
            isDone = true
            return true
        }
        if Self.isStatusLine(text) {
            parseStatusLine(text)
        } else if let colon = text.firstIndex(of: UInt8(ascii: ":")),
            let name = Self.keptHeaders.first(where: { Self.spells($0.bytes, text[..<colon]) })?.name
        {
            var start = colon + 1
            var end = text.count
            while start < end, text[start] == UInt8(ascii: " ") || text[start] == UInt8(ascii: "\t") { start += 1 }
            while end > start, text[end - 1] == UInt8(ascii: " ") || text[end - 1] == UInt8(ascii: "\t") { end -= 1 }
            // Room for the few a response has, once (not regrown header by header).
            if headers.capacity == 0 { headers.reserveCapacity(4) }
            headers.append((name, String(decoding: text[start..<end], as: UTF8.self)))
        }
        return false
    }

    /// The values of the kept header `name` (lowercase), in order.
    func values(_ name: String) -> [String] {
        // Most kept names differ in length: that is checked first, without comparing the text.
        let length = name.utf8.count
        return headers.compactMap { $0.name.utf8.count == length && $0.name == name ? $0.value : nil }
    }

    /// Lets go of the headers once the handler has read them.
    mutating func dropHeaders() {
        headers = []
    }

    /// Whether the connection stays open after this response (HTTP/1.0 only when asked).
    var keepsAlive: Bool {
        if version.major >= 2 { return true }
        // The first Connection header's value, compared without making strings for it.
        let connection = headers.first { $0.name == "connection" }?.value
        func says(_ token: String) -> Bool {
            connection.map { Self.spells(token.utf8, $0.utf8) } ?? false
        }
        if version.major == 1, version.minor == 0 { return says("keep-alive") }
        return !says("close")
    }

    /// Whether `bytes` spell `lowercase` (lowercase ASCII), in any case.
    private static func spells(_ lowercase: some Collection<UInt8>, _ bytes: some Collection<UInt8>) -> Bool {
        lowercase.count == bytes.count
            && zip(lowercase, bytes).allSatisfy { expected, byte in expected == (byte >= 65 && byte <= 90 ? byte + 32 : byte) }
    }

    /// The line starts with `HTTP/`.
    private static func isStatusLine(_ text: UnsafeRawBufferPointer) -> Bool {
        text.count >= 5 && text[0] == UInt8(ascii: "H") && text[1] == UInt8(ascii: "T") && text[2] == UInt8(ascii: "T")
            && text[3] == UInt8(ascii: "P") && text[4] == UInt8(ascii: "/")
    }

    /// `HTTP/1.1 200 OK`, `HTTP/2 200`: the version's digits and the status code, read in place.
    private mutating func parseStatusLine(_ text: UnsafeRawBufferPointer) {
        headers.removeAll()
        var index = 5  // past "HTTP/"
        func number() -> Int? {
            var value: Int?
            while index < text.count, text[index] >= 48, text[index] <= 57 {
                value = (value ?? 0) * 10 + Int(text[index] - 48)
                index += 1
            }
            return value
        }
        let major = number() ?? 1
        var minor = 0
        if index < text.count, text[index] == UInt8(ascii: ".") {
            index += 1
            minor = number() ?? 0
        }
        version = (major, minor)
        while index < text.count, text[index] == UInt8(ascii: " ") { index += 1 }
        status = number() ?? 0
    }
}
