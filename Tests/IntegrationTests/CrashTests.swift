import Foundation
import Testing
import WorkerTestSupport

/// `kill -9` at random moments of `worker sync`, then checks what the next runs find. The kill
/// count comes from `WORKER_CRASH_KILLS` (default 20; `scripts/crash-test.sh` runs 200), the
/// moments from `WORKER_CRASH_SEED` (a new one each run unless set; a failure names it).
@Suite(.hangLimit) struct CrashTests {
    struct Tally {
        var kills = 0
        var killedMidRun = 0
        var temporaryFilesFound = 0
        var corruptObjects = 0
        var danglingRows = 0
        var unreferencedObjects = 0
    }

    /// With `writers` 2, two syncs of different manifests run on the cache at once (the lock is
    /// held only to commit), each pruning what its manifest does not name — the other's rows — and
    /// each killed at its own random moment.
    @Test(arguments: [1, 2]) func killedRunsNeverLeaveTheCacheInconsistent(writers: Int) async throws {
        let kills = Int(ProcessInfo.processInfo.environment["WORKER_CRASH_KILLS"] ?? "") ?? 20
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        var tally = Tally()
        let seed = TestSeed.from("WORKER_CRASH_SEED")
        var generator = SplitMix64(seed: seed)
        var lastManifest = ""
        for round in 0..<kills {
            // Each round names 150 new files per writer (and prunes the rest), so there is always
            // work to interrupt: downloads, installs, index commits, removals.
            var processes: [ChildProcess] = []
            for writer in 0..<writers {
                let keys = (0..<150).map { "r\(round)-w\(writer)-\($0)" }
                lastManifest = harness.manifest(
                    keys.map { ("/slow/3/gen/\($0)", TestOrigin.generated($0)) },
                    name: "r\(round)-w\(writer).yaml")
                processes.append(
                    try WorkerBinary.spawn(
                        ["sync", lastManifest, "--cache-dir", harness.cache, "--jobs", "4", "--prune", "--force", "-q"],
                        log: harness.directory.path + "/round-\(writer).log"))
            }
            for process in processes.shuffled(using: &generator) {
                try await Task.sleep(nanoseconds: UInt64.random(in: 0...250_000_000 / UInt64(writers), using: &generator))
                if process.isRunning { tally.killedMidRun += 1 }
                kill(process.processIdentifier, SIGKILL)
                await process.exited()
                tally.kills += 1
            }
            tally.temporaryFilesFound += harness.temporaryFiles().count

            // What the next run finds: verify checks both ways (a kill before the index was
            // created left no cache to check).
            guard FileManager.default.fileExists(atPath: harness.cache + "/index.sqlite") else { continue }
            let report = try await verify(harness)
            tally.corruptObjects += (report["corrupt_objects"] as? [String])?.count ?? -1
            tally.danglingRows += (report["missing_objects"] as? [String])?.count ?? -1
            tally.unreferencedObjects = (report["unreferenced_objects"] as? [String])?.count ?? 0
        }
        let final = try await WorkerBinary.run(["sync", lastManifest, "--cache-dir", harness.cache, "--prune", "--force", "-q"])
        #expect(final.code == 0, "\(final.stderr)")
        let report = try await verify(harness)
        #expect((report["corrupt_objects"] as? [String])?.isEmpty == true)
        #expect((report["missing_objects"] as? [String])?.isEmpty == true)
        #expect(try harness.records().count == 150)
        #expect(harness.temporaryFiles().isEmpty)
        // Objects a kill left installed but unindexed are swept by the next sync.
        #expect((report["unreferenced_objects"] as? [String])?.isEmpty == true, "\(report["unreferenced_objects"] ?? [])")
        #expect(harness.objects().count == Set(try harness.records().map(\.object)).count)
        print(
            "crash test, \(writers) writer\(writers == 1 ? "" : "s"): \(tally.kills) kills (\(tally.killedMidRun) mid-run), corrupt objects \(tally.corruptObjects), "
                + "dangling rows \(tally.danglingRows), temp files left by kills \(tally.temporaryFilesFound) "
                + "(all removed by the final run), unindexed objects after the last kill \(tally.unreferencedObjects) "
                + "(swept by the final sync)")
        #expect(tally.corruptObjects == 0, "seed \(seed) (WORKER_CRASH_SEED)")
        #expect(tally.danglingRows == 0, "seed \(seed) (WORKER_CRASH_SEED)")
        // A test of kills that all land before or after the work proves nothing.
        #expect(tally.killedMidRun * 2 >= tally.kills, "only \(tally.killedMidRun) of \(tally.kills) kills landed mid-run")
    }

    /// `kill -9` while `sync --tree` publishes (a warm cache: the run is the publish): the tree's
    /// link always names a complete version, old or new, and the next run removes what a killed
    /// one left half built.
    @Test func killedPublishesLeaveTheTreeAtACompleteVersion() async throws {
        let kills = Int(ProcessInfo.processInfo.environment["WORKER_CRASH_KILLS"] ?? "") ?? 20
        let directory = TemporaryDirectory()
        let count = 1000
        for file in 0..<count { directory.write("site/f\(file).txt", "file \(file)\n") }
        let cache = directory.path + "/cache"
        let tree = directory.path + "/tree"
        // Each round puts every file under a folder of its own, four trees in turn: a version to
        // build again that a killed run may have been deleting (two switches ago).
        func manifest(_ round: Int) -> String {
            directory.write(
                "site/r\(round).yaml",
                "version: 1\nentries:\n"
                    + (0..<count).map { "  - url: f\($0).txt\n    path: r\(round)/f\($0).txt\n" }.joined())
        }
        func check(_ round: Int) -> String? {
            guard let link = try? FileManager.default.destinationOfSymbolicLink(atPath: tree) else {
                return round == 0 ? nil : "no link after round \(round)"
            }
            let folders = (try? FileManager.default.contentsOfDirectory(atPath: tree)) ?? []
            guard folders.count == 1, let folder = folders.first,
                let files = try? FileManager.default.contentsOfDirectory(atPath: tree + "/" + folder), files.count == count,
                (0..<count).allSatisfy({ (try? String(contentsOfFile: "\(tree)/\(folder)/f\($0).txt", encoding: .utf8)) == "file \($0)\n" })
            else { return "\(link) is not a complete version: \(folders)" }
            return nil
        }
        let warm = try await WorkerBinary.run(["sync", manifest(0), "--cache-dir", cache, "--tree", tree, "-q"])
        #expect(warm.code == 0, "\(warm.stderr)")
        // The median of three whole runs bounds the kills: one slow run (the machine busy with
        // other tests) would put most kills after the quicker runs that follow had ended.
        var times: [Double] = []
        for round in 1...3 {
            let timed = try await WorkerBinary.run(["sync", manifest(round), "--cache-dir", cache, "--tree", tree, "-q"])
            #expect(timed.code == 0, "\(timed.stderr)")
            times.append(timed.seconds)
        }
        let typical = times.sorted()[1]
        let seed = TestSeed.from("WORKER_CRASH_SEED")
        var generator = SplitMix64(seed: seed)
        var killedMidRun = 0
        // Kills land within `bound` of the start: at first 0.9 of a typical run, then halved
        // after a kill that came after the run had ended and grown back after one that landed
        // mid-run, so that kills follow how long a run takes now (the suite's other tests come
        // and go while this one runs).
        var bound = typical * 0.9
        for round in 2..<(2 + kills) {
            let process = try WorkerBinary.spawn(
                ["sync", manifest(round % 4), "--cache-dir", cache, "--tree", tree, "-q"],
                log: directory.path + "/round.log")
            try await Task.sleep(nanoseconds: UInt64.random(in: 0...UInt64(bound * 1e9), using: &generator))
            let midRun = process.isRunning
            kill(process.processIdentifier, SIGKILL)
            if midRun { killedMidRun += 1 }
            bound = midRun ? min(bound * 1.2, typical * 0.9) : bound / 2
            await process.exited()
            #expect(check(round) == nil, "round \(round), seed \(seed) (WORKER_CRASH_SEED)")
        }
        // A version no killed run built, so that the last run switches: a publisher cleans the
        // versions folder when it switches (a killed run may have left a whole version it never
        // linked; with nothing to switch, it stays until the next switch).
        let final = try await WorkerBinary.run(["sync", manifest(4), "--cache-dir", cache, "--tree", tree, "-q"])
        #expect(final.code == 0, "\(final.stderr)")
        #expect(check(4) == nil)
        let left = (try? FileManager.default.contentsOfDirectory(atPath: directory.path + "/.tree.worker")) ?? []
        #expect(left.filter { $0.hasPrefix(".") }.isEmpty, "half-built versions removed: \(left)")
        #expect(left.filter { $0.hasPrefix("v-") }.count <= 2, "\(left)")
        print(
            "crash test, tree: \(kills) kills (\(killedMidRun) mid-run; a run publishing \(count) files takes \(typical) s, the median of \(times))"
        )
        #expect(killedMidRun * 3 >= kills, "only \(killedMidRun) of \(kills) kills landed mid-run")
    }

    /// `kill -9` while a large tree is being linked, placed by the publish's own progress (the
    /// version being built holds a few thousand of its files), not by timing: the link still names
    /// the version before, and the next run builds the new one whole instead of taking what the
    /// killed run left for built.
    @Test func aKillWhileALargeTreeIsLinkedLeavesNoHalfVersion() async throws {
        let directory = TemporaryDirectory()
        let count = 20_000
        for file in 0..<count { directory.write("site/f\(file).txt", "file \(file)\n") }
        let cache = directory.path + "/cache"
        let tree = directory.path + "/tree"
        let versions = directory.path + "/.tree.worker"
        func manifest(_ folder: String) -> String {
            directory.write(
                "site/\(folder).yaml",
                "version: 1\nentries:\n"
                    + (0..<count).map { "  - url: f\($0).txt\n    path: \(folder)/f\($0).txt\n" }.joined())
        }
        func complete(_ folder: String) -> Bool {
            let files = (try? FileManager.default.contentsOfDirectory(atPath: tree + "/" + folder)) ?? []
            return files.count == count
                && (0..<count).allSatisfy {
                    (try? String(contentsOfFile: "\(tree)/\(folder)/f\($0).txt", encoding: .utf8)) == "file \($0)\n"
                }
        }
        let warm = try await WorkerBinary.run(["sync", manifest("a"), "--cache-dir", cache, "--tree", tree, "-q"], seconds: 600)
        #expect(warm.code == 0, "\(warm.stderr)")
        let before = try FileManager.default.destinationOfSymbolicLink(atPath: tree)
        let previous = (before as NSString).lastPathComponent
        #expect(complete("a"))

        // The same objects under other paths: the run is the publish alone.
        let process = try WorkerBinary.spawn(
            ["sync", manifest("b"), "--cache-dir", cache, "--tree", tree, "-q"],
            log: directory.path + "/killed.log")
        // Each look is made with the run stopped (SIGSTOP), so that it cannot link the rest of
        // the version while the folder is being counted: it moves on only between looks.
        var linkedAtKill = 0
        while process.isRunning {
            kill(process.processIdentifier, SIGSTOP)
            waitUntilStopped(process.processIdentifier)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: versions)) ?? []
            for name in names where name != "lock" && name != previous {
                let linked = (try? FileManager.default.contentsOfDirectory(atPath: versions + "/" + name + "/b"))?.count ?? 0
                if linked >= 3000 && linked < count { linkedAtKill = linked }
            }
            if linkedAtKill > 0 {
                kill(process.processIdentifier, SIGKILL)
                break
            }
            kill(process.processIdentifier, SIGCONT)
            try await Task.sleep(nanoseconds: 1_000_000)
        }
        await process.exited()
        try #require(linkedAtKill > 0, "the publish ended before 3,000 of its \(count) files were seen linked")
        #expect(
            try FileManager.default.destinationOfSymbolicLink(atPath: tree) == before, "the link moved while the version was half built")
        #expect(complete("a"))

        let next = try await WorkerBinary.run(["sync", manifest("b"), "--cache-dir", cache, "--tree", tree, "-q"], seconds: 600)
        #expect(next.code == 0, "\(next.stderr)")
        let served = (try? FileManager.default.contentsOfDirectory(atPath: tree + "/b"))?.count ?? 0
        #expect(complete("b"), "killed with \(linkedAtKill) files linked, the next run links a version holding \(served) of \(count)")
        let left = (try? FileManager.default.contentsOfDirectory(atPath: versions)) ?? []
        #expect(left.filter { $0.hasPrefix(".") }.isEmpty, "half-built versions removed: \(left)")
    }

    /// Waits until the process is stopped (its state in /proc is `T`) or gone.
    private func waitUntilStopped(_ pid: pid_t) {
        while let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")"),
            stat[stat.index(close, offsetBy: 2)] != "T" && stat[stat.index(close, offsetBy: 2)] != "Z"
        {
            usleep(100)
        }
    }

    private func verify(_ harness: Harness) async throws -> [String: Any] {
        let path = harness.directory.path + "/verify.json"
        let result = try await WorkerBinary.run(["verify", "--cache-dir", harness.cache, "--report", path, "-q"])
        #expect(result.code == 0 || result.code == 1, "\(result.stderr)")
        return try #require(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
    }
}
