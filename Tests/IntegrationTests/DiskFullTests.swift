import Foundation
import Testing
import WorkerTestSupport

/// A full disk, simulated with a file-size limit (`ulimit -f`): writes past it fail with EFBIG
/// just as they would with ENOSPC. (Permission tests would need a non-root user; CI runs as root.)
@Suite(.hangLimit) struct DiskFullTests {
    func runLimited(kilobytes: Int, _ arguments: [String]) async throws -> WorkerBinary.Result {
        try await WorkerBinary.run(
            ["-c", "ulimit -f \(kilobytes); exec \"$0\" \"$@\"", WorkerBinary.path] + arguments,
            executable: "/bin/sh")
    }

    @Test func anEntryThatDoesNotFitFailsAsIOAndTheRestIsStored() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let big = [UInt8](repeating: 0x42, count: 1 << 20)
        harness.origin.set("/f/big", big)
        let small = harness.serve("small")
        let manifest = harness.manifest([("/f/big", big), ("/f/small", small)])
        let result = try await runLimited(kilobytes: 512, ["sync", manifest, "--cache-dir", harness.cache])
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
        let result = try await runLimited(kilobytes: 1, ["sync", manifest, "--cache-dir", harness.cache])
        #expect(result.code == 4)
        #expect(result.stderr.contains("cache unusable: \(harness.cache)/index.sqlite"))
        #expect(harness.objects().isEmpty)
    }
}

/// A disk that fills in the middle of a run, for real: a 3 MB tmpfs in a mount namespace of the
/// test's own (root only, as CI runs). What was verified and fits is committed, the report is
/// written, the rest fails as "no space left on the device" (exit 1, not 4), nothing half-written
/// stays, and the next run asks only for what is missing. (f94e2a0: exit 4 with SQLite's "database
/// or disk is full", no report, nothing indexed.)
@Suite(.hangLimit) struct FullTmpfsTests {
    /// 1,500 entries of 0.9–2.9 KB (about 2.8 MB) on the harness's origin, more than a 3 MB tmpfs
    /// holds with its cache; the manifest, the folder for outputs and the mount point.
    private static func fixture(_ harness: Harness) throws -> (manifest: String, out: String, mount: String) {
        var entries: [(path: String, bytes: [UInt8]?)] = []
        for number in 0..<1500 {
            let bytes = (0..<(900 + number % 2000)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ number) }
            harness.origin.set("/a/\(number)", bytes)
            entries.append(("/a/\(number)", bytes))
        }
        let out = harness.directory.path
        try FileManager.default.createDirectory(atPath: out + "/disk", withIntermediateDirectories: true)
        return (harness.manifest(entries), out, out + "/disk")
    }

    @Test(.enabled(if: Conditions.canMount, "needs root for a tmpfs in a mount namespace (CI runs as root)"))
    func aDiskThatFillsCommitsWhatFitsAndTheNextRunAsksOnlyForTheRest() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let (manifest, out, mount) = try Self.fixture(harness)
        // Both runs and a verify in one namespace: the tmpfs goes with it.
        let script = """
            mount -t tmpfs -o size=3m tmpfs '\(mount)' || exit 97
            '\(WorkerBinary.path)' sync '\(manifest)' --cache-dir '\(mount)/cache' --report '\(out)/r1.json' -q; echo $? > '\(out)/code1'
            ls -A '\(mount)/cache/tmp' | wc -l > '\(out)/tmp-files'
            '\(WorkerBinary.path)' sync '\(manifest)' --cache-dir '\(mount)/cache' --report '\(out)/r2.json' -q; echo $? > '\(out)/code2'
            '\(WorkerBinary.path)' verify --cache-dir '\(mount)/cache' -q; echo $? > '\(out)/code3'
            """
        let run = try await WorkerBinary.run(["-m", "/bin/sh", "-c", script], executable: "/usr/bin/unshare")
        try #require(run.code == 0, "unshare: \(run.code) \(run.stderr)")
        func code(_ name: String) throws -> String {
            try String(contentsOfFile: out + "/" + name, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        func totals(_ name: String) throws -> [String: Int] {
            let report = try #require(
                try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/" + name))) as? [String: Any])
            return try #require(report["totals"] as? [String: Int])
        }
        let firstCode = try code("code1")
        #expect(firstCode == "1", "the first run: \(firstCode)")
        let first = try totals("r1.json")
        #expect(first["added"]! > 100 && first["failed"]! > 100, "\(first)")
        let rows = try #require(
            (try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/r1.json"))) as? [String: Any])?["entries"]
                as? [[String: Any]])
        #expect(
            rows.filter { $0["status"] as? String == "failed" }.allSatisfy {
                ($0["error"] as? String ?? "").contains("no space left on the device")
            })
        #expect(try code("tmp-files") == "0", "nothing half-written stays in tmp/")
        // The next run asks only for what the first did not store.
        let requestsBefore = harness.origin.totalRequests
        #expect(try code("code2") == "1")
        let second = try totals("r2.json")
        #expect(second["unchanged"] == first["added"], "\(second)")
        #expect(harness.origin.totalRequests - requestsBefore <= first["failed"]!, "it asked again for what it had")
        #expect(try code("code3") == "0", "the cache stays consistent")
    }

    /// After the first "no space" the run starts no new downloads (3038a51 downloaded all 1,500
    /// bodies it could not store): what it asked for is what fit, the bodies in flight when the
    /// disk filled, and no more.
    @Test(.enabled(if: Conditions.canMount, "needs root for a tmpfs in a mount namespace (CI runs as root)"))
    func aFullDiskStopsTheRunAsking() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let (manifest, out, mount) = try Self.fixture(harness)
        let script = """
            mount -t tmpfs -o size=3m tmpfs '\(mount)' || exit 97
            '\(WorkerBinary.path)' sync '\(manifest)' --cache-dir '\(mount)/cache' --report '\(out)/r.json' --jobs 8 -q; echo $? > '\(out)/code'
            """
        let run = try await WorkerBinary.run(["-m", "/bin/sh", "-c", script], executable: "/usr/bin/unshare")
        try #require(run.code == 0, "unshare: \(run.code) \(run.stderr)")
        #expect((try? String(contentsOfFile: out + "/code", encoding: .utf8)) == "1\n")
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/r.json"))) as? [String: Any])
        let totals = try #require(report["totals"] as? [String: Int])
        let added = try #require(totals["added"])
        #expect(added > 100 && totals["failed"]! > 100, "\(totals)")
        let rows = try #require(report["entries"] as? [[String: Any]])
        let failed = rows.filter { $0["status"] as? String == "failed" }
        let otherwise = failed.filter {
            !($0["reason"] as? String == "io" && ($0["error"] as? String ?? "").contains("no space left on the device"))
        }
        #expect(otherwise.isEmpty, "\(otherwise.count) of \(failed.count) failed otherwise: \(otherwise.prefix(3))")
        // Eight at a time: the bodies after the first "no space" are those in flight then.
        func count(_ words: String) -> Int { failed.filter { ($0["error"] as? String ?? "").contains(words) }.count }
        let notTried = count("not tried"), afterFull = count("(writing ") + count("cut short")
        let noRoom = count("the index had no room")
        // The entries not tried made no request; the bodies that met the full disk are at most
        // those in flight then (eight a fetch thread); rows the index had no room for were
        // downloaded before it filled (their batch's commit found it full).
        #expect(
            notTried > 500 && harness.origin.totalRequests <= 1500 - notTried,
            "requests \(harness.origin.totalRequests), not tried \(notTried)")
        #expect(afterFull <= 2 * 8, "bodies that met the full disk: \(afterFull) (stored \(added), no room for the row \(noRoom))")
    }
}
