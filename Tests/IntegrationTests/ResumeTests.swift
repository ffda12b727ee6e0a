import Foundation
import Testing
import WorkerTestSupport

/// Large bodies cut off part-way are resumed with `Range` + `If-Range`, in the run or the next;
/// every byte is still verified. Through the binary, against an origin that counts body bytes.
@Suite(.hangLimit) struct ResumeTests {
    static let big: [UInt8] = (0..<(6 << 20)).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 13) }

    private func partials(_ harness: Harness) -> [String] {
        harness.directory.files(under: "cache/partial")
    }

    @Test func aCutBodyIsResumedInTheSameRun() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        harness.origin.set("/f/big", Self.big)
        let manifest = harness.manifest([("/cut/40/f/big", Self.big)])
        let result = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache])
        #expect(result.code == 0, "\(result.stderr)")
        #expect(try harness.cachedBytes("/cut/40/f/big") == Self.big)
        let sent = harness.origin.bodyBytesSent
        print(
            "resume: the origin sent \(sent) bytes for a body of \(Self.big.count) cut at 40 % "
                + "(\(String(format: "%.3f", Double(sent) / Double(Self.big.count)))×)")
        #expect(Double(sent) <= 1.2 * Double(Self.big.count), "the origin sent \(sent) bytes for a body of \(Self.big.count)")
        #expect(harness.origin.lastHeaders("/cut/40/f/big")?["range"] == "bytes=\(Self.big.count * 40 / 100)-")
        #expect(harness.origin.lastHeaders("/cut/40/f/big")?["if-range"] != nil)
        #expect(partials(harness).isEmpty, "nothing left behind")
    }

    @Test func aCutBodyIsResumedByTheNextRun() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        harness.origin.set("/f/big", Self.big)
        let manifest = harness.manifest([("/cut/40/f/big", Self.big)])
        let first = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--retries", "0"])
        #expect(first.code == 1)
        #expect(partials(harness).count == 2, "the part and its record are kept: \(partials(harness))")
        #expect(try await WorkerBinary.run(["verify", "--cache-dir", harness.cache]).code == 0, "a kept part is no problem")
        let second = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--retries", "0"])
        #expect(second.code == 0, "\(second.stderr)")
        #expect(try harness.cachedBytes("/cut/40/f/big") == Self.big)
        #expect(Double(harness.origin.bodyBytesSent) <= 1.2 * Double(Self.big.count))
        #expect(partials(harness).isEmpty)
    }

    @Test func aChangedVersionStartsOver() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        harness.origin.set("/f/big", Self.big)
        let old = harness.manifest([("/cut/40/f/big", Self.big)], name: "old.yaml")
        #expect(try await WorkerBinary.run(["sync", old, "--cache-dir", harness.cache, "--retries", "0"]).code == 1)
        #expect(partials(harness).count == 2)
        // The file changes: If-Range no longer matches, the origin sends it whole (200).
        let changed = Self.big.map { $0 ^ 0x5a }
        harness.origin.set("/f/big", changed)
        let new = harness.manifest([("/cut/40/f/big", changed)], name: "new.yaml")
        let result = try await WorkerBinary.run(["sync", new, "--cache-dir", harness.cache, "--retries", "0"])
        #expect(result.code == 0, "\(result.stderr)")
        #expect(try harness.cachedBytes("/cut/40/f/big") == changed)
        #expect(partials(harness).isEmpty)
    }

    @Test func aKeptPartThatDoesNotAddUpIsDropped() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        harness.origin.set("/f/big", Self.big)
        let manifest = harness.manifest([("/cut/40/f/big", Self.big)])
        #expect(try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--retries", "0"]).code == 1)
        // Someone damages the kept part: the resumed body fails its hash, and the retry starts over.
        let part = try #require(partials(harness).first { !$0.hasSuffix(".meta") })
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: harness.cache + "/partial/" + part))
        try handle.seek(toOffset: 10)
        handle.write(Data([0xff, 0xfe, 0xfd]))
        try handle.close()
        let result = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--retries", "1"])
        #expect(result.code == 0, "\(result.stderr)")
        #expect(try harness.cachedBytes("/cut/40/f/big") == Self.big, "every byte verified")
    }

    @Test func smallBodiesAreNotKept() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let small = Array(Self.big.prefix(200_000))
        harness.origin.set("/f/small", small)
        let manifest = harness.manifest([("/cut/40/f/small", small)])
        #expect(try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--retries", "0"]).code == 1)
        #expect(partials(harness).isEmpty, "under the threshold a cut body is fetched again whole")
    }
}
