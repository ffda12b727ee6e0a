import Foundation
import Synchronization
import Testing
import WorkerTestSupport

@testable import WorkerFetch
@testable import WorkerManifest
@testable import WorkerReport
@testable import WorkerSupport

/// worker links FoundationEssentials only; the text helpers that replace Foundation's must give
/// what Foundation gives (the tests link Foundation, so it is the reference here).
@Suite(.hangLimit) struct TextTests {
    @Test func formatIsPrintf() {
        for value in [0, 0.5, 1, 2.345, 12.5, 1234.5678, 1e-7, 3e21, -7.25, 86400.125] {
            for format in ["%.1f", "%.2f", "%.3f", "%g"] {
                #expect(Text.format(format, value) == String(format: format, value), "\(format) \(value)")
            }
        }
        #expect(Text.format("%.2f", 1e300).count > 300, "longer than the first buffer")
        #expect(Text.format("%.2f", 1e300) == String(format: "%.2f", 1e300))
    }

    @Test func trimmingMatchesFoundation() {
        for text in ["", " ", "a", "  a b  ", "\tx\t", "\u{00A0}y\u{2003}", " line\n", "\n ", "gzip ", " 30"] {
            #expect(Text.trimmingSpaces(text) == text.trimmingCharacters(in: .whitespaces), "'\(text)'")
            #expect(Text.trimmingWhitespace(text) == text.trimmingCharacters(in: .whitespacesAndNewlines), "'\(text)'")
        }
    }

    @Test func pathNamesMatchNSString() {
        // (One-character paths are left out: this Foundation's deletingLastPathComponent traps on
        // them. NSString gives what the last four expectations say.)
        for path in ["/a/b.png", "/a/b/", "ab", "a/b", "/a", "out/list.yaml", "out/.hidden", "x.tar.gz", "/a//b"] {
            #expect(PathName.lastComponent(path) == (path as NSString).lastPathComponent, "'\(path)'")
            #expect(PathName.parent(path) == (path as NSString).deletingLastPathComponent, "'\(path)'")
        }
        #expect(PathName.lastComponent("/") == "/")
        #expect(PathName.parent("/") == "/")
        #expect(PathName.lastComponent("a") == "a")
        #expect(PathName.parent("a") == "")
        for name in ["list.yaml", "list", ".hidden", "x.tar.gz", "a.b/c"] {
            #expect(PathName.deletingExtension(name) == (name as NSString).deletingPathExtension, "'\(name)'")
        }
    }

    @Test func escapingReplacesScalarsNotCharacters() {
        #expect(Text.escaping("a|b\r\nc") { $0 == "|" ? "\\|" : $0 == "\n" ? " " : nil } == "a\\|b\r c")
        #expect(HTMLReportWriter.escape("<a href=\"x\">&</a>") == "&lt;a href=&quot;x&quot;&gt;&amp;&lt;/a&gt;")
        #expect(PrometheusMetricsWriter.escape("a\\b\"c\nd") == "a\\\\b\\\"c\\nd")
    }

    @Test func percentEncodingMatchesFoundation() {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: ";")
        for segment in ["plain.png", "a b", "ü.png", "50%", "a;b", "x?y#z", "k=v&w", "~tilde_(1)", "日本"] {
            #expect(ManifestWriter.encode(segment) == segment.addingPercentEncoding(withAllowedCharacters: allowed), "\(segment)")
        }
        for encoded in ["a%20b", "%C3%BC", "100%", "%zz", "%4", "%FF", "plain", "%2Fslash"] {
            #expect(URLResolver.percentDecoded(encoded[...]) == encoded.removingPercentEncoding, "\(encoded)")
        }
    }

    /// A text holding a YAML noncharacter is written escaped, and the manifest reads back.
    @Test func noncharactersAreWrittenEscapedAndReadBack() throws {
        for text in ["a\u{FFFE}b", "c\u{FFFF}", "\u{FEFF}d"] {
            let quoted = ManifestWriter.quote(text)
            #expect(quoted.unicodeScalars.allSatisfy { $0.value < 0xFEFF || $0.value > 0xFFFF }, "\(quoted)")
            let directory = TemporaryDirectory()
            let path = directory.write("m.yaml", "version: 1\nname: \(quoted)\nentries:\n  - url: https://h.example/a\n")
            let set = try ManifestLoader().load(paths: [path])
            #expect(set.manifests[0].name == text)
        }
    }

    @Test func httpDatesAndTimestampsMatchFoundation() {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        for seconds in [0.0, 784_111_777, 1_795_000_000, 4_102_444_800] {
            let date = Date(timeIntervalSince1970: seconds)
            #expect(FailureClassifier.httpDate(formatter.string(from: date)) == seconds)
            let iso = ISO8601DateFormatter()
            #expect(Timestamp.iso(seconds) == iso.string(from: date))
        }
        #expect(FailureClassifier.httpDate("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
        for bad in ["soon", "Sun, 06 Nov 1994 08:49:37 PST", "Sun, 32 Nov 1994 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT", ""] {
            #expect(FailureClassifier.httpDate(bad) == nil, "\(bad)")
        }
    }

    @Test func fileErrorsAreTheSystemsWords() {
        do {
            _ = try FileManager.default.contentsOfDirectory(atPath: "/nonexistent-\(getpid())")
            Issue.record("listed a folder that does not exist")
        } catch {
            #expect(ErrorText.describe(error) == "No such file or directory")
        }
        #expect(
            ErrorText.describe(CocoaError(.fileWriteUnknown, userInfo: ["NSLocalizedDescription": "cannot write x"])) == "cannot write x")
    }

    @Test func appendingNeedsAnExistingFile() throws {
        let directory = TemporaryDirectory()
        let path = directory.write("summary.md", "one\n")
        try AtomicFile.append(Data("two\n".utf8), to: path)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "one\ntwo\n")
        #expect(throws: (any Error).self) { try AtomicFile.append(Data("x".utf8), to: directory.path + "/missing.md") }
    }
}

/// The one hex codec: what it writes, what it refuses.
@Suite(.hangLimit) struct HexTests {
    @Test func encodesLowercaseAndDecodesEitherCase() {
        #expect(Hex.encode([0x00, 0x0f, 0xa5, 0xff]) == "000fa5ff")
        #expect(Hex.encode([]) == "")
        #expect(Hex.decode("000FA5ff") == [0x00, 0x0f, 0xa5, 0xff])
        #expect(Hex.decode("") == [])
    }

    @Test func refusesOddLengthsAndOtherCharacters() {
        #expect(Hex.decode("abc") == nil)
        #expect(Hex.decode("zz") == nil)
        #expect(Hex.decode("0g") == nil)
        #expect(Hex.decode("a ") == nil)
    }

    /// The strict decoder of digests (the index's object names, the manifests' hashes) agrees
    /// with the either-case decoder on lowercase digits and refuses every other byte, in either
    /// place of a pair and at any offset.
    @Test func lowercaseDecoderTakesLowercaseDigitsOnly() {
        func decodeLowercase(_ text: [UInt8], into count: Int) -> [UInt8]? {
            var out = [UInt8](repeating: 0, count: count)
            let valid = text.withUnsafeBytes { digits in out.withUnsafeMutableBytes { Hex.decodeLowercase(digits, into: $0) } }
            return valid ? out : nil
        }
        let digits = Array("00ff7a9c0123456789abcdef".utf8)
        #expect(decodeLowercase(digits, into: 12) == Hex.decode(String(decoding: digits, as: UTF8.self)))
        #expect(decodeLowercase([], into: 0) == [])
        #expect(decodeLowercase(digits, into: 11) == nil, "a count that is not twice the output's")
        #expect(decodeLowercase(Array(digits.dropLast()), into: 12) == nil)
        let lowercase = Set("0123456789abcdef".utf8)
        for byte in UInt8.min...UInt8.max where !lowercase.contains(byte) {
            for offset in [0, 1, 6, 23] {
                var text = digits
                text[offset] = byte
                #expect(decodeLowercase(text, into: 12) == nil, "byte \(byte) at \(offset)")
            }
        }
    }
}

/// The program's own threads: a latch finished on another thread ends every wait for it, and a
/// wait after the finish returns at once.
@Suite(.hangLimit) struct ThreadLatchTests {
    @Test func aLatchFinishedOnAnotherThreadEndsTheWait() {
        let latch = ThreadLatch()
        let written = Mutex(0)
        #expect(
            Threads.detach(name: "test-latch") {
                written.withLock { $0 = 42 }
                latch.finish()
            })
        latch.wait()
        #expect(written.withLock { $0 } == 42, "the wait ended before the other thread finished")
        latch.wait()
    }
}
