import WorkerSupport

/// What a response's head says about how its body is framed and coded, checked before a byte of
/// it is kept: every instance of each header (a second `Content-Encoding` after `identity` counts),
/// and the arithmetic on their numbers (a `Content-Range` whose bounds, length and total disagree
/// is refused, never summed into an overflow).
enum ResponseFraming {
    /// The body's declared length: nil without `Content-Length`; a problem when an instance is not
    /// a plain decimal or two instances differ (RFC 9112 §6.3: a framing error).
    static func contentLength(_ values: [String]) -> Result<Int64?, Problem> {
        var length: Int64?
        for value in values {
            // One field may also list the same number twice (`5, 5`), which RFC 9110 allows.
            // Read in place, as bytes: this runs for every response.
            var text = value
            let problem = text.withUTF8 { utf8 -> Problem? in
                var start = 0
                while start <= utf8.count {
                    var end = start
                    while end < utf8.count, utf8[end] != UInt8(ascii: ",") { end += 1 }
                    var first = start, last = end
                    // HTTP's optional whitespace around each number.
                    while first < last, utf8[first] == 0x20 || utf8[first] == 0x09 { first += 1 }
                    while last > first, utf8[last - 1] == 0x20 || utf8[last - 1] == 0x09 { last -= 1 }
                    guard let number = Checked.decimal(bytes: UnsafeBufferPointer(rebasing: utf8[first..<last])) else {
                        return Problem("Content-Length '\(Sanitize.terminal(value, limit: 40))' is not a byte count")
                    }
                    if let length, length != number {
                        return Problem("the response declares two lengths (Content-Length \(length) and \(number))")
                    }
                    length = number
                    start = end + 1
                }
                return nil
            }
            if let problem { return .failure(problem) }
        }
        return .success(length)
    }

    /// Why the body as sent is not the content itself, or nil: any content coding other than
    /// `identity` (worker never asks for one), or a transfer coding other than `chunked` (libcurl
    /// removes only that one; the bytes of any other are not the content).
    static func codingProblem(contentEncoding: [String], transferEncoding: [String]) -> (problem: Problem, encoding: String)? {
        for coding in codings(contentEncoding) where coding != "identity" {
            return (
                Problem(
                    "the server sent the body with Content-Encoding: \(Sanitize.terminal(coding, limit: 40)), "
                        + "which was not asked for; encoded bytes are never stored as the content"), coding
            )
        }
        for coding in codings(transferEncoding) where coding != "chunked" && coding != "identity" {
            return (
                Problem(
                    "the server sent the body with Transfer-Encoding: \(Sanitize.terminal(coding, limit: 40)), "
                        + "which was not asked for; encoded bytes are never stored as the content"), coding
            )
        }
        return nil
    }

    /// The codings a header's instances list, lowercased, empty elements left out.
    private static func codings(_ values: [String]) -> [String] {
        values.flatMap { $0.split(separator: ",") }.map { Text.trimmingSpaces($0).lowercased() }.filter { !$0.isEmpty }
    }

    /// `bytes FIRST-LAST/TOTAL`, with FIRST ≤ LAST < TOTAL (TOTAL may be `*`: unknown).
    struct ContentRange: Equatable {
        let first: Int64
        let last: Int64
        let total: Int64?
        /// LAST - FIRST + 1: cannot overflow, since 0 ≤ FIRST ≤ LAST < 10^18.
        var length: Int64 { last - first + 1 }
    }

    static func contentRange(_ value: String) -> ContentRange? {
        let trimmed = Text.trimmingSpaces(value)
        guard trimmed.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = trimmed.dropFirst(6)
        let halves = spec.split(separator: "/", omittingEmptySubsequences: false)
        guard halves.count == 2 else { return nil }
        let bounds = halves[0].split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Checked.decimal(bounds[0]), let last = Checked.decimal(bounds[1]),
            first <= last
        else { return nil }
        if halves[1] == "*" { return ContentRange(first: first, last: last, total: nil) }
        guard let total = Checked.decimal(halves[1]), last < total else { return nil }
        return ContentRange(first: first, last: last, total: total)
    }

    /// The rest of a body kept up to `offset`, as a 206 must describe it: one `Content-Range`
    /// starting at `offset` and running to the end of the representation, and a `Content-Length`
    /// (if any) equal to its length. Returns the whole body's size.
    static func resumedTotal(offset: Int64, contentRange: [String], contentLength: [String]) -> Result<Int64, Problem> {
        guard contentRange.count == 1, let range = Self.contentRange(contentRange[0]) else {
            return .failure(Problem("the server answered the resumed request without one valid Content-Range"))
        }
        guard range.first == offset else {
            return .failure(Problem("the server answered the resumed request with another range (from byte \(range.first), not \(offset))"))
        }
        guard let total = range.total, total == range.last + 1 else {
            return .failure(Problem("the server answered the resumed request with a range that does not reach the end of the body"))
        }
        switch Self.contentLength(contentLength) {
        case .failure(let problem):
            return .failure(problem)
        case .success(let length?) where length != range.length:
            return .failure(
                Problem("the resumed answer's Content-Length (\(length)) disagrees with its Content-Range (\(range.length) bytes)"))
        case .success:
            return .success(total)
        }
    }

    struct Problem: Error, Equatable {
        let message: String
        init(_ message: String) { self.message = message }
    }
}
