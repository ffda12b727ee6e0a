import Crypto
import Foundation
import Testing
import WorkerTestSupport

@testable import WorkerFetch
@testable import WorkerManifest
@testable import WorkerSupport

/// The retry policy and the body sink on their own: no network, temporary files.
@Suite(.hangLimit) struct RetryPolicyTests {
    let policy = RetryPolicy(retries: 3, baseDelay: 0.25, maxDelay: 30)

    @Test func transientFailuresBackOffWithJitterWithinTheCeiling() throws {
        let reset = FetchFailure(.connection, "connection reset by the server")
        for attempt in 1...3 {
            let ceiling = min(30, 0.25 * Double(1 << (attempt - 1)))
            for _ in 0..<50 {
                let delay = try #require(policy.delay(after: reset, attempt: attempt))
                #expect(delay >= ceiling / 2 && delay <= ceiling, "attempt \(attempt): \(delay)")
            }
        }
        #expect(policy.delay(after: reset, attempt: 4) == nil, "3 retries, then give up")
    }

    @Test func whatIsRetriedAndWhatIsNot() {
        for status in [500, 502, 503, 408, 429] {
            #expect(policy.delay(after: FetchFailure(.httpStatus, "HTTP \(status)", httpStatus: status), attempt: 1) != nil, "\(status)")
        }
        for status in [400, 401, 403, 404, 410] {
            #expect(policy.delay(after: FetchFailure(.httpStatus, "HTTP \(status)", httpStatus: status), attempt: 1) == nil, "\(status)")
        }
        #expect(policy.delay(after: FetchFailure(.hashMismatch, "expected a got b"), attempt: 1) == nil)
        #expect(policy.delay(after: FetchFailure(.tooLarge, "too large"), attempt: 1) == nil)
        #expect(policy.delay(after: FetchFailure(.connection, "TLS: not trusted", detail: .tls(.untrustedCertificate)), attempt: 1) == nil)
        var restart = FetchFailure(.hashMismatch, "a resumed body did not add up")
        restart.restartsFromScratch = true
        #expect(policy.delay(after: restart, attempt: 1) != nil, "a resumed body that went wrong is tried again from byte 0")
    }

    @Test func retryAfterIsHonouredUpToTheCap() {
        #expect(policy.delay(after: FetchFailure(.httpStatus, "HTTP 429", httpStatus: 429, retryAfter: 2), attempt: 1) == 2)
        #expect(policy.delay(after: FetchFailure(.httpStatus, "HTTP 503", httpStatus: 503, retryAfter: 3600), attempt: 1) == 30)
        #expect(policy.delay(after: FetchFailure(.httpStatus, "HTTP 503", httpStatus: 503, retryAfter: -5), attempt: 1) == 0)
    }
}

@Suite(.hangLimit) struct BodySinkTests {
    private func sink(_ directory: TemporaryDirectory, expected: ContentHash?, maxSize: Int64 = 1 << 20) -> BodySink {
        let path = directory.path + "/body"
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        return BodySink(fd: fd, path: path, expected: expected, maxSize: maxSize)
    }

    private func write(_ sink: inout BodySink, _ text: String) -> FetchFailure? {
        Array(text.utf8).withUnsafeBytes { sink.write($0) }
    }

    @Test func aMatchingBodyIsKeptWithItsSHA256() throws {
        let directory = TemporaryDirectory()
        let expected = try ContentHash.parse("md5:\(Hex.encode(Array(Insecure_MD5.of("hello world"))))").get()
        var body = sink(directory, expected: expected)
        #expect(write(&body, "hello ") == nil)
        #expect(write(&body, "world") == nil)
        let result = try body.close().get()
        #expect(result.sha256 == "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9")
        #expect(try String(contentsOfFile: directory.path + "/body", encoding: .utf8) == "hello world")
    }

    @Test func aMismatchDeletesTheFileAndSaysBothHashes() throws {
        let directory = TemporaryDirectory()
        let expected = try ContentHash.parse("sha256:" + String(repeating: "0", count: 64)).get()
        var body = sink(directory, expected: expected)
        #expect(write(&body, "something else") == nil)
        guard case .failure(let failure) = body.close() else { Issue.record("a mismatch was accepted"); return }
        #expect(failure.reason == .hashMismatch)
        #expect(failure.message.contains("expected sha256:0000") && failure.message.contains("got sha256:"))
        // sha256("something else"), by sha256sum.
        let actual = try ContentHash.parse("sha256:f41f3fa625ff120ddca7ef456bf66371ecea23c129f4e4c32367101edb516cf8").get()
        #expect(failure.detail == .hashMismatch(expected: expected, actual: actual))
        #expect(failure.actualHash == actual)
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/body"))
    }

    @Test func theSizeLimitStopsTheBody() {
        let directory = TemporaryDirectory()
        var body = sink(directory, expected: nil, maxSize: 8)
        #expect(write(&body, "12345678") == nil)
        #expect(write(&body, "9")?.reason == .tooLarge)
        body.discard()
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/body"))
    }

    @Test func aResumedBodyHashesTheBytesAlreadyThere() throws {
        let directory = TemporaryDirectory()
        let path = directory.write("part", "hello ")
        let expected = try ContentHash.parse("sha256:b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9").get()
        var body = try BodySink.resuming(path: path, offset: 6, expected: expected, maxSize: 1 << 20).get()
        #expect(body.size == 6)
        #expect(write(&body, "world") == nil)
        #expect(try body.close().get().sha256 == expected.hex, "every byte, the kept ones too")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "hello world")
        // A kept part that is not as long as its record says is not resumed.
        let short = directory.write("short", "hel")
        if case .success = BodySink.resuming(path: short, offset: 6, expected: expected, maxSize: 1 << 20) {
            Issue.record("a part shorter than its offset was resumed")
        }
    }
}

/// MD5 for fixtures, from the same library the code uses.
private enum Insecure_MD5 {
    static func of(_ text: String) -> [UInt8] { Array(Insecure.MD5.hash(data: Array(text.utf8))) }
}
