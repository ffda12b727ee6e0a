import Testing
import WorkerTestSupport

@testable import WorkerFetch
@testable import WorkerSupport

/// The checks every number and string from outside goes through: framing headers, decimals,
/// millisecond conversions, and one sanitizer per kind of output.
@Suite(.hangLimit) struct OutsideInputTests {
    @Test func decimalsAreDigitsOnlyAndFitInt64() {
        #expect(Checked.decimal("0") == 0)
        #expect(Checked.decimal("123456789012345678") == 123_456_789_012_345_678)
        for bad in ["", "+5", "-1", " 5", "5 ", "1e3", "0x10", "9223372036854775807", "99999999999999999999", "５"] {
            #expect(Checked.decimal(bad) == nil, "\(bad)")
        }
        // Bytes not in one piece of memory are read the same way.
        #expect(Checked.decimal(digits: "4096".utf8.lazy.map { $0 }) == 4096)
        #expect(Checked.decimal(digits: "40 96".utf8.lazy.map { $0 }) == nil)
    }

    @Test func millisecondsNeverTrap() {
        #expect(Checked.milliseconds(0.0015, upTo: 1000) == 2)
        #expect(Checked.milliseconds(-3, upTo: 1000) == 0)
        #expect(Checked.milliseconds(1e300, upTo: 1000) == 1000)
        #expect(Checked.milliseconds(.infinity, upTo: 10) == 10)
        #expect(Checked.milliseconds(.nan, upTo: 10) == 0)
        #expect(Checked.int64(1e19) == nil && Checked.int64(.nan) == nil && Checked.int64(42.9) == 42)
        #expect(Checked.saturatingSum(.max, 1) == .max && Checked.saturatingSum(.min, -1) == .min)
        #expect(Checked.sum(.max, 1) == nil && Checked.sum(2, 3) == 5)
    }

    @Test func contentLengthInstancesMustAgree() {
        #expect(ResponseFraming.contentLength([]) == .success(nil))
        #expect(ResponseFraming.contentLength(["5"]) == .success(5))
        #expect(ResponseFraming.contentLength(["5", "5"]) == .success(5))
        #expect(ResponseFraming.contentLength(["5, 5"]) == .success(5))
        #expect(ResponseFraming.contentLength([" 5\t,\t5 "]) == .success(5), "spaces and tabs around each number")
        #expect(ResponseFraming.contentLength(["123456789012345678"]) == .success(123_456_789_012_345_678))
        for bad in [
            ["5", "6"], ["5, 6"], ["-1"], ["+5"], ["9223372036854775807"], ["x"], [""], ["5,"], ["\u{a0}5"], ["٥"],
            [",5"], ["5,,5"], [" "], ["5 5"], ["5", "x"],
        ] {
            guard case .failure = ResponseFraming.contentLength(bad) else {
                Issue.record("\(bad) was accepted")
                continue
            }
        }
    }

    @Test func everyCodingInstanceCounts() {
        #expect(ResponseFraming.codingProblem(contentEncoding: [], transferEncoding: []) == nil)
        #expect(ResponseFraming.codingProblem(contentEncoding: ["identity"], transferEncoding: ["chunked"]) == nil)
        #expect(ResponseFraming.codingProblem(contentEncoding: ["identity", "gzip"], transferEncoding: [])?.encoding == "gzip")
        #expect(ResponseFraming.codingProblem(contentEncoding: ["identity, br"], transferEncoding: [])?.encoding == "br")
        #expect(ResponseFraming.codingProblem(contentEncoding: [], transferEncoding: ["gzip, chunked"])?.encoding == "gzip")
    }

    @Test func aResumedRangeMustContinueAndEndTheBody() {
        // Kept 100 bytes of 300: the rest is 100-299/300, 200 bytes.
        #expect(ResponseFraming.resumedTotal(offset: 100, contentRange: ["bytes 100-299/300"], contentLength: ["200"]) == .success(300))
        #expect(ResponseFraming.resumedTotal(offset: 100, contentRange: ["bytes 100-299/300"], contentLength: []) == .success(300))
        let bad: [([String], [String])] = [
            (["bytes 100-299/300"], ["9223372036854775807"]),  // the overflow of the first review
            (["bytes 100-299/300"], ["199"]),  // length disagrees with the range
            (["bytes 101-299/300"], ["199"]),  // starts elsewhere
            (["bytes 100-399/400"], ["200"]),  // end and total disagree with the length
            (["bytes 100-299/310"], ["200"]),  // does not reach the end
            (["bytes 100-299/*"], ["200"]),  // end unknown
            (["bytes 100-9223372036854775806/9223372036854775807"], []),
            (["bytes 100-299/300", "bytes 0-299/300"], []),  // two ranges
            (["bytes=100-"], []), ([], ["200"]),
        ]
        for (range, length) in bad {
            guard case .failure = ResponseFraming.resumedTotal(offset: 100, contentRange: range, contentLength: length) else {
                Issue.record("\(range) \(length) was accepted")
                continue
            }
        }
    }

    @Test func validatorsWithControlsAreDropped() {
        #expect(ResponseHandler.validator("\"abc\"") == "\"abc\"")
        #expect(ResponseHandler.validator("Tue, 01 Jan 2030 00:00:00 GMT") != nil)
        for bad in ["\"a\u{1}b\"", "\"a\rb\"", "x\u{7f}", "\u{1b}[2J", "é", String(repeating: "a", count: 600), ""] {
            #expect(ResponseHandler.validator(bad) == nil, "\(bad.debugDescription)")
        }
    }

    @Test func eachOutputHasItsSanitizer() {
        #expect(Sanitize.terminal("a\u{1b}[31mb\u{9b}c\nd\u{202e}e") == "a?[31mb?c?d?e")
        #expect(Sanitize.terminal("abcdef", limit: 3) == "abc…")
        #expect(Sanitize.terminalLines("a\u{1b}b\n\tc\u{85}") == "a?b\n\tc?")
        #expect(Sanitize.markdown("<img src=x> [a](b) `c` | $x$ *y*\nz") == "\\<img src=x\\> \\[a\\]\\(b\\) \\`c\\` \\| \\$x\\$ \\*y\\* z")
        #expect(Sanitize.markup("<a b=\"c\">&'\u{1}\u{9b}\u{fffe}\t") == "&lt;a b=&quot;c&quot;&gt;&amp;&#39;???\t")
    }
}
