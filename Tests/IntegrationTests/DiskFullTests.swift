import Foundation
import Testing

/// A full disk, simulated with a file-size limit (`ulimit -f`): writes past it fail with EFBIG
/// just as they would with ENOSPC. (Permission tests would need a non-root user; CI runs as root.)
@Suite struct DiskFullTests {
    func runLimited(kilobytes: Int, _ arguments: [String]) throws -> WorkerBinary.Result {
        try WorkerBinary.run(["-c", "ulimit -f \(kilobytes); exec \"$0\" \"$@\"", WorkerBinary.path] + arguments,
                             executable: "/bin/sh")
    }

    @Test func anEntryThatDoesNotFitFailsAsIOAndTheRestIsStored() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let big = [UInt8](repeating: 0x42, count: 1 << 20)
        harness.origin.set("/f/big", big)
        let small = harness.serve("small")
        let manifest = harness.manifest([("/f/big", big), ("/f/small", small)])
        let result = try runLimited(kilobytes: 512, ["sync", manifest, "--cache-dir", harness.cache])
        #expect(result.code == 1)
        #expect(result.stderr.contains("\(harness.origin.url("/f/big")): io: cannot write"))
        #expect(result.stderr.contains("File too large"))
        #expect(harness.objects() == [sha256(small)], "no partial object")
        #expect(harness.temporaryFiles().isEmpty)
        #expect(try harness.records().map(\.url) == [harness.origin.url("/f/small")])
    }

    @Test func anIndexThatCannotGrowIsExit4NamingThePath() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let manifest = harness.manifest([("/f/a", harness.serve("a"))])
        let result = try runLimited(kilobytes: 1, ["sync", manifest, "--cache-dir", harness.cache])
        #expect(result.code == 4)
        #expect(result.stderr.contains("cache unusable: \(harness.cache)/index.sqlite"))
        #expect(harness.objects().isEmpty)
    }
}
