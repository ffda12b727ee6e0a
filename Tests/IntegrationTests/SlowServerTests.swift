import Foundation
import Testing
import WorkerTestSupport

/// Large bodies from a slow server, through the built binary: they download side by side from
/// the start, and progress shows their bytes while none has finished.
@Suite(.hangLimit) struct SlowServerTests {
    /// `duration_seconds` of a JSON report.
    static func duration(_ path: String) throws -> Double {
        let document = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any]
        return try #require(document?["duration_seconds"] as? Double)
    }

    @Test func aFewSlowBodiesDownloadInParallelFromTheStart() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        // Three bodies of 80 bytes at one byte every 50 ms: 4 s each, 12 s one after another.
        var entries: [(path: String, bytes: [UInt8]?)] = []
        for name in ["a", "b", "c"] {
            let bytes = harness.serve(name + ".bin", String(repeating: name, count: 79) + "\n")
            entries.append(("/drip/50/f/\(name).bin", bytes))
        }
        let manifest = harness.manifest(entries)
        let report = harness.directory.path + "/r.json"
        let result = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--report", report])
        #expect(result.code == 0, "\(result.stderr)")
        // The run's own duration (the report's): a loaded machine's process start does not count.
        let elapsed = try Self.duration(report)
        // In parallel about 4 s, one after another 12 s; the margin is a loaded machine's.
        #expect(elapsed < 8, "the second and third start when the first answer begins, not when it ends: \(elapsed) s")
    }

    @Test func aStalledBodyTimesOutWhenTheReadTimeoutSays() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let bytes = harness.serve("half.bin", String(repeating: "h", count: 999) + "\n")
        let manifest = harness.manifest([("/stall/f/half.bin", bytes)])
        let report = harness.directory.path + "/r.json"
        let result = try await WorkerBinary.run([
            "sync", manifest, "--cache-dir", harness.cache, "--read-timeout", "5",
            "--retries", "0", "--report", report,
        ])
        #expect(result.code == 1)
        #expect(result.stderr.contains("read timeout"), "\(result.stderr)")
        // Half the body, then silence: noticed 5 s after the last byte, plus the connect and some
        // slack for a loaded machine (the run's own duration, from its report). Before the
        // silence watch it was noticed at twice the timeout (10 s here).
        let elapsed = try Self.duration(report)
        #expect(elapsed >= 5 && elapsed < 8, "\(elapsed) s")
    }

    @Test func aTerminalSeesTheBytesOfTheOnlyDownloadWhileItRuns() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let bytes = harness.serve("slow.bin", String(repeating: "x", count: 49) + "\n")
        let manifest = harness.manifest([("/drip/40/f/slow.bin", bytes)])
        // `script` gives the binary a pseudo-terminal: the live line is redrawn in place.
        let command = "\(WorkerBinary.path) sync \(manifest) --cache-dir \(harness.cache)"
        let result = try await WorkerBinary.run(["-qfec", command, "/dev/null"], executable: "/usr/bin/script")
        #expect(result.code == 0, "\(result.stdout)")
        // While the one download runs (0 of 1 entries done), the line counts its bytes.
        let lines = result.stdout.components(separatedBy: "\r\u{1B}[2K").filter { $0.hasPrefix("0/1 entries") }
        let counts = Set(lines.compactMap { line in line.split(separator: " ").dropFirst(2).first.flatMap { Int($0) } })
        #expect(counts.count >= 3, "the byte count moves while nothing has finished: \(lines)")
        #expect(counts.contains { $0 > 0 && $0 < 50 }, "\(counts)")
        #expect(lines.contains { $0.contains(" of 50 B") }, "the total, once the only download said it: \(lines)")
    }

    @Test func logLinesAndJSONProgressCarryBytes() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        // 6 s of one slow body: the 5 s line comes while it runs.
        let bytes = harness.serve("slow.bin", String(repeating: "y", count: 59) + "\n")
        let manifest = harness.manifest([("/drip/100/f/slow.bin", bytes)])
        let result = try await WorkerBinary.run([
            "sync", manifest, "--cache-dir", harness.cache, "--progress", "always",
            "--log-format", "json",
        ])
        #expect(result.code == 0, "\(result.stderr)")
        let objects = result.stderr.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let during = objects.filter { ($0["message"] as? String)?.hasPrefix("progress: 0/1 entries") == true }
        #expect(!during.isEmpty, "a progress line while the only download runs: \(result.stderr)")
        for line in during {
            let received = Int(line["progress.bytes"] as? String ?? "") ?? 0
            #expect(received > 0 && received < 60, "\(line)")
            #expect(line["progress.bytes_total"] as? String == "60", "\(line)")
            #expect(line["progress.bytes_per_second"] != nil)
        }
    }
}
