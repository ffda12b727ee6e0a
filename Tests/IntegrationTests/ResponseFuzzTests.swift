import Crypto
import Foundation
@testable import ManifestSync
import Testing
import WorkerTestSupport

/// Generated hostile responses from a raw loopback server, through the built binary: status lines,
/// header sets, Content-Length/Content-Range/Content-Encoding/Transfer-Encoding combinations,
/// chunk framing, 1xx/204/206/304 where they do not belong, early closes and stalls, with and
/// without a kept part on disk to resume. Each iteration is one entry; a run syncs a batch of
/// them. Every run must end by itself (no trap, no hang past the timeouts), and what it stored
/// must be verified (hashed entries) or be exactly a body the response's own framing declares
/// (hashless entries).
///
/// `WORKER_FUZZ_ITERATIONS` (default 300) and `WORKER_FUZZ_SEED` (default: a fixed one) choose
/// how many and which; a failure names the seed, the iteration and the answers.
@Suite struct ResponseFuzzTests {
    static let environment = ProcessInfo.processInfo.environment
    static let iterations = environment["WORKER_FUZZ_ITERATIONS"].flatMap(Int.init) ?? 300
    static let seed = environment["WORKER_FUZZ_SEED"].flatMap(UInt64.init) ?? 0x5EED_2026_1125

    @Test func generatedResponsesNeverTrapHangOrStoreUnverifiedBytes() throws {
        let origin = try RawOrigin()
        defer { origin.stop() }
        var random = SplitMix64(seed: Self.seed)
        var checked = 0
        // A batch at a time (a case may hold a body of over a megabyte, twice).
        for start in stride(from: 0, to: Self.iterations, by: 50) {
            let batch = (start..<min(start + 50, Self.iterations)).map { FuzzCase.make(number: $0, random: &random) }
            checked += try run(batch, origin: origin)
        }
        #expect(checked == Self.iterations)
        if checked == Self.iterations { print("response fuzzer: \(Self.iterations) iterations (seed \(Self.seed)), every run ended by itself, nothing unverified stored") }
    }

    /// Syncs one batch; returns how many cases were checked.
    private func run(_ batch: [FuzzCase], origin: RawOrigin) throws -> Int {
        let directory = TemporaryDirectory()
        let cache = directory.path + "/cache"
        try FileManager.default.createDirectory(atPath: cache + "/partial", withIntermediateDirectories: true)
        var manifest = "version: 1\nname: fuzz\nentries:\n"
        for item in batch {
            let path = "/fuzz/\(Self.seed)/\(item.number)"
            origin.script(path, item.answers.map(\.raw))
            let url = origin.url(path)
            manifest += "  - url: \(url)\n"
            if item.hashed { manifest += "    hash: sha256:\(sha256(item.content))\n" }
            if let kept = item.kept {
                // A part kept by an earlier run: the first request asks for the rest.
                let key = sha256(url)
                directory.write("cache/partial/\(key)", Array(item.content.prefix(kept)))
                directory.write("cache/partial/\(key).meta", "\"v1\"\n\(url)\n")
            }
        }
        let path = directory.write("m.yaml", manifest)
        let started = Date()
        let arguments = ["sync", path, "--cache-dir", cache, "--retries", "1", "--read-timeout", "1", "--entry-timeout", "5",
                         "--connect-timeout", "2", "--max-size", "4MiB"]
        let (result, signalled) = try WorkerBinary.runBoundedReportingSignal(arguments, seconds: 90)
        let (code, log) = (result.code, result.stderr)
        let elapsed = Date().timeIntervalSince(started)
        let context = "seed \(Self.seed), iterations \(batch.first!.number)–\(batch.last!.number)"
        let ended = !signalled && (code == 0 || code == 1)
        #expect(ended, "\(context): exit \(code)\(signalled ? " by a signal" : ""): \(log.suffix(3000))")
        #expect(elapsed < 60, "\(context): the run took \(elapsed) s")
        guard !signalled, code == 0 || code == 1 else { return 0 }
        let records = try CacheIndex(path: cache + "/index.sqlite", create: false).allRecords()
        let byURL = Dictionary(records.map { ($0.url, $0) }, uniquingKeysWith: { $1 })
        for item in batch {
            let url = origin.url("/fuzz/\(Self.seed)/\(item.number)")
            guard let record = byURL[url] else { continue }
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: CacheLayout.objectPath(cache, record.object))))
            #expect(sha256(bytes) == record.object, "\(context): object \(record.object) does not hash to its name")
            if item.hashed {
                let verified = bytes == item.content
                #expect(verified, "iteration \(item.number) (\(context)): stored bytes that fail the hash\n\(item)")
            } else {
                let declared = item.acceptable.contains(bytes)
                #expect(declared, "iteration \(item.number) (\(context)): stored \(bytes.count) bytes no answer's framing declares\n\(item)")
            }
        }
        return batch.count
    }
}

/// A small deterministic generator (SplitMix64), so a seed reproduces a failure.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476C_E5B9_1CE5
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
