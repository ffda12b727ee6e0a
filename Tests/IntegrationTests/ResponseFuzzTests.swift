import Crypto
import Foundation
import Testing
import WorkerTestSupport

@testable import WorkerStore

/// Generated hostile responses from raw loopback servers, through the built binary: status lines,
/// header sets (folded lines too), Content-Length/Content-Range/Content-Encoding/Transfer-Encoding
/// combinations, chunk framing, 1xx/204/206/304 where they do not belong, early closes and stalls,
/// connections kept alive from one answer to the next, with and without a kept part on disk to
/// resume. Each iteration is one entry; a run syncs a batch of them. Every run must end by itself
/// (no trap, no hang past the timeouts), and every entry must end as `FuzzModel` says its answers'
/// framing and hash decide: stored with exactly those bytes, or failed with nothing stored.
///
/// `WORKER_RESPONSE_FUZZ_ITERATIONS` (default 300) and `WORKER_RESPONSE_FUZZ_SEED` (default: a
/// fixed one) choose how many and which; a failure names the seed, the iteration, the answers and
/// the model's reading of each attempt.
@Suite(.hangLimit) struct ResponseFuzzTests {
    static let iterations = TestSeed.count("WORKER_RESPONSE_FUZZ_ITERATIONS", 300)
    static let seed = TestSeed.from("WORKER_RESPONSE_FUZZ_SEED", fixed: 0x5EED_2026_1125)
    static let batchSize = 50
    static let model = FuzzModel(retries: 1)

    @Test func generatedResponsesEndAsTheirFramingAndHashDecide() async throws {
        // One origin per entry of a batch: an origin's breaker and Retry-After pauses then concern
        // one entry only, so each entry's outcome is its answers' alone.
        let origins = try (0..<Self.batchSize).map { _ in try RawOrigin() }
        defer { origins.forEach { $0.stop() } }
        var random = SplitMix64(seed: Self.seed)
        var tally = Tally()
        // A batch at a time (a case may hold a body of over a megabyte, twice).
        for start in stride(from: 0, to: Self.iterations, by: Self.batchSize) {
            let batch = (start..<min(start + Self.batchSize, Self.iterations)).map { FuzzCase.make(number: $0, random: &random) }
            try await run(batch, origins: origins, tally: &tally)
        }
        #expect(tally.checked == Self.iterations)
        print(
            "response fuzzer: \(tally.checked) of \(Self.iterations) iterations checked (seed \(Self.seed), "
                + "WORKER_RESPONSE_FUZZ_SEED): \(tally.stored) stored as the model says, \(tally.failed) failed as it says")
    }

    struct Tally {
        var checked = 0
        var stored = 0
        var failed = 0
    }

    /// Syncs one batch and checks each entry against the model.
    private func run(_ batch: [FuzzCase], origins: [RawOrigin], tally: inout Tally) async throws {
        let directory = TemporaryDirectory()
        let cache = directory.path + "/cache"
        try FileManager.default.createDirectory(atPath: cache + "/partial", withIntermediateDirectories: true)
        var manifest = "version: 1\nname: fuzz\nentries:\n"
        var urls: [String] = []
        for (slot, item) in batch.enumerated() {
            let origin = origins[slot]
            let path = "/fuzz/\(Self.seed)/\(item.number)"
            origin.script(path, item.answers.map(\.raw))
            let url = origin.url(path)
            urls.append(url)
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
        let report = directory.path + "/report.json"
        let arguments = [
            "sync", path, "--cache-dir", cache, "--retries", "\(Self.model.retries)", "--read-timeout", "1",
            "--entry-timeout", "5", "--connect-timeout", "2", "--max-size", "4MiB", "--report", report,
        ]
        let (result, signalled) = try await WorkerBinary.runBoundedReportingSignal(arguments, seconds: 120)
        let context = "seed \(Self.seed), iterations \(batch.first!.number)–\(batch.last!.number)"
        let ended = !signalled && (result.code == 0 || result.code == 1)
        #expect(ended, "\(context): exit \(result.code)\(signalled ? " by a signal" : ""): \(result.stderr.suffix(3000))")
        guard ended else { return }
        let records = try CacheIndex(path: cache + "/index.sqlite", create: false).allRecords()
        let byURL = Dictionary(records.map { ($0.url, $0) }, uniquingKeysWith: { $1 })
        let rows = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any]
        let statuses = Dictionary(
            ((rows?["entries"] as? [[String: Any]]) ?? []).map { ($0["url"] as? String ?? "", $0) },
            uniquingKeysWith: { $1 })
        for (item, url) in zip(batch, urls) {
            let (expected, trace) = Self.model.outcome(of: item)
            let stored: [UInt8]? = try byURL[url].map {
                Array(try Data(contentsOf: URL(fileURLWithPath: CacheLayout.objectPath(cache, $0.object))))
            }
            let row = statuses[url]
            let found: FuzzModel.Outcome = stored.map { .stored($0) } ?? .failed
            let explain =
                "iteration \(item.number) (\(context)): the model says \(expected), the run \(found)"
                + " (\(row?["status"] as? String ?? "no row"): \(row?["error"] as? String ?? ""))\n\(item)\n  "
                + trace.joined(separator: "\n  ") + "\n  heads as sent:\n"
                + item.answers.map { "    " + String(decoding: $0.raw.bytes.prefix($0.headLength), as: UTF8.self).debugDescription }
                .joined(separator: "\n")
            #expect(found == expected, "\(explain)")
            if let stored, let record = byURL[url] {
                #expect(sha256(stored) == record.object, "\(context): object \(record.object) does not hash to its name")
            }
            if expected == .failed {
                #expect(row?["status"] as? String == "failed", "\(explain)")
                tally.failed += 1
            } else {
                tally.stored += 1
            }
            tally.checked += 1
        }
    }
}
