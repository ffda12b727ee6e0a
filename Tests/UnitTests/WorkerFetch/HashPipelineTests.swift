import Crypto
import Foundation
import Testing
import WorkerTestSupport

@testable import WorkerFetch
@testable import WorkerManifest

/// A large body hashed beside its download gives the digests an in-line hash gives, whatever the
/// chunk sizes, and a wrong body is still refused.
@Suite(.hangLimit) struct HashPipelineTests {
    private func sink(_ directory: TemporaryDirectory, _ name: String, expected: ContentHash?, declared: Int64?) -> BodySink {
        let path = directory.path + "/" + name
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        return BodySink(fd: fd, path: path, expected: expected, maxSize: 1 << 30, declaredSize: declared)
    }

    @Test func aPipelinedHashEqualsTheInLineOne() throws {
        let directory = TemporaryDirectory()
        let body = (0..<(20 << 20) + 12345).map { UInt8(truncatingIfNeeded: $0 &* 2654435761 >> 7) }
        let sha = SHA256.hash(data: body).map { String(format: "%02x", $0) }.joined()
        let expected = try ContentHash.parse("sha256:" + sha).get()
        var results: [String] = []
        for declared in [nil, Int64(body.count)] {
            var sink = sink(directory, "b\(results.count)", expected: expected, declared: declared)
            var offset = 0
            var step = 1
            while offset < body.count {
                // Chunks of every size from 1 byte to 96 KiB, as libcurl hands them over.
                let count = min(body.count - offset, Int(UInt(bitPattern: step) % (96 << 10)) + 1)
                body[offset..<(offset + count)].withUnsafeBytes { #expect(sink.write($0) == nil) }
                offset += count
                step = step &* 31 &+ 7
            }
            guard case .success(let digests) = sink.close() else {
                Issue.record("the body was refused")
                return
            }
            results.append(digests.sha256)
        }
        #expect(results == [sha, sha])
    }

    @Test func aWrongLargeBodyIsRefused() throws {
        let directory = TemporaryDirectory()
        let expected = try ContentHash.parse("sha256:" + String(repeating: "0", count: 64)).get()
        var sink = sink(directory, "w", expected: expected, declared: 16 << 20)
        let chunk = [UInt8](repeating: 7, count: 1 << 16)
        for _ in 0..<256 { chunk.withUnsafeBytes { _ = sink.write($0) } }
        guard case .failure(let failure) = sink.close() else {
            Issue.record("a body that fails its hash was accepted")
            return
        }
        #expect(failure.reason == .hashMismatch)
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/w"))
    }
}
