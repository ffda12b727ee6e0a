import Foundation
import Testing
import WorkerStore
import WorkerSupport
import WorkerTestSupport

/// One cache, many users: readers while a writer holds the lock, several writers at once, the
/// commit cadence, a changed object, outputs checked first, pending failures — through the binary.
@Suite(.hangLimit) struct SharedCacheTests {
    /// Reads answer while another process holds the cache's lock (a sync committing, a gc): a
    /// reader that waited would hang here, so each runs bounded.
    @Test func readersNeverWaitForTheLock() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let bytes = harness.serve("a")
        let manifest = harness.manifest([("/f/a", bytes)])
        #expect(try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "-q"]).code == 0)
        let held = try await CacheLock(directory: harness.cache, wait: 0, context: RunContext())
        let url = harness.origin.url("/f/a")
        let object = harness.objectPath(sha256(bytes))
        let get = try await WorkerBinary.runBounded(["get", url, "--cache-dir", harness.cache, "--wait-lock", "0"], seconds: 20)
        #expect(get.code == 0 && get.stdout.contains(object), "\(get.stdout)")
        let reads: [[String]] = [
            ["path", url], ["status"], ["plan", manifest], ["verify"],
            ["export", "--layout", "hash", harness.directory.path + "/out", manifest], ["fingerprint", manifest],
        ]
        for arguments in reads {
            let cacheArguments = arguments[0] == "fingerprint" ? [] : ["--cache-dir", harness.cache]
            let result = try await WorkerBinary.runBounded(arguments + cacheArguments, seconds: 20)
            #expect(result.code == 0, "\(arguments[0]): \(result.stdout)")
        }
        #expect(harness.origin.totalRequests == 1, "a hit makes no request")
        // A miss commits what it fetched: that needs the lock (here, --wait-lock 0.3 runs out).
        harness.serve("b")
        let miss = try await WorkerBinary.run(["get", harness.origin.url("/f/b"), "--cache-dir", harness.cache, "--wait-lock", "0.3"])
        #expect(miss.code == 3, "\(miss.stderr)")
        held.release()
        let fetched = try await WorkerBinary.run(["get", harness.origin.url("/f/b"), "--cache-dir", harness.cache, "--wait-lock", "0"])
        #expect(fetched.code == 0, "\(fetched.stderr)")
    }

    /// Two syncs of different manifests, each with one 5 s answer, started together: their
    /// downloads overlap (one after the other would take 10 s or more), and the cache holds both.
    @Test func twoWritersDownloadAtTheSameTime() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        var processes: [(ChildProcess, String)] = []
        var expected: [String] = []
        for writer in 0..<2 {
            var entries = (0..<20).map { ("/gen/w\(writer)-\($0)", Optional(TestOrigin.generated("w\(writer)-\($0)"))) }
            entries.append(("/slow/5000/gen/w\(writer)-slow", TestOrigin.generated("w\(writer)-slow")))
            expected += entries.compactMap { $0.1.map(sha256) }
            let manifest = harness.manifest(entries, name: "w\(writer).yaml")
            let log = harness.directory.path + "/w\(writer).log"
            processes.append(
                (
                    try WorkerBinary.spawn(
                        [
                            "sync", manifest, "--cache-dir", harness.cache, "-q",
                            "--report", harness.directory.path + "/w\(writer).json",
                        ], log: log), log
                ))
        }
        for (process, log) in processes {
            await process.exited()
            #expect(process.terminationStatus == 0, "\((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        }
        // Each run's own clock: each waited 5 s for its slow answer, and the two spans overlap
        // (one after the other they would not). By a second at least, not by most of the 5 s:
        // on a loaded machine (the whole suite on 2 cores) one run started 2.5 s after the other.
        let format = ISO8601DateFormatter()
        format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let spans = try (0..<2).map { writer -> (start: Double, end: Double) in
            let report = try #require(
                try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: harness.directory.path + "/w\(writer).json")))
                    as? [String: Any])
            let start = try #require((report["started_at"] as? String).flatMap { format.date(from: $0) }).timeIntervalSince1970
            return (start, start + (try #require(report["duration_seconds"] as? Double)))
        }
        let overlap = min(spans[0].end, spans[1].end) - max(spans[0].start, spans[1].start)
        #expect(overlap >= 1, "the two runs overlapped by \(overlap) s: \(spans)")
        #expect(Set(harness.objects()) == Set(expected))
        #expect(try harness.records().count == 42)
        let verify = try await WorkerBinary.run(["verify", "--cache-dir", harness.cache])
        #expect(verify.code == 0 && verify.stdout.contains("the cache and its index agree"), "\(verify.stdout)")
    }

    /// A run of the same manifests as a running one (a schedule that overlaps its last run) waits
    /// for it, up to --wait-lock; another shard of them does not.
    @Test func aSyncOfTheSameManifestsWaitsForTheRunningOne() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let manifest = harness.manifest([("/slow/600000/gen/same", TestOrigin.generated("same"))])
        let process = try WorkerBinary.spawn(
            ["sync", manifest, "--cache-dir", harness.cache, "-q", "--read-timeout", "20m"],
            log: harness.directory.path + "/first.log")
        defer { kill(process.processIdentifier, SIGKILL) }
        // Once its request arrived, the first run holds its job's lock.
        let deadline = Date().addingTimeInterval(20)
        while harness.origin.totalRequests == 0, Date() < deadline { try await Task.sleep(nanoseconds: 20_000_000) }
        let second = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--wait-lock", "0.3"])
        #expect(
            second.code == 3 && second.stderr.contains("cache is locked by another run"), "\(second.code) \(second.stdout) \(second.stderr)"
        )
        #expect(harness.origin.totalRequests == 1, "the waiting run fetched nothing")
        // Another shard of the same manifest is another job: it runs (its entry, if it has it,
        // runs into the deadline: exit 1), it does not wait for the lock (exit 3).
        let shard = try await WorkerBinary.run([
            "sync", manifest, "--cache-dir", harness.cache, "--shard", "1/2", "--wait-lock", "0",
            "--deadline", "1s",
        ])
        #expect(shard.code == 0 || shard.code == 1, "another shard runs at once: \(shard.code) \(shard.stderr)")
        #expect(process.isRunning)
    }

    /// 199 small files finish at once while a long one still downloads: they are committed
    /// (indexed, durable) at once (the batch interval is 0.5 s), so `status` counts them and a
    /// `kill -9` does not lose them. Before, they waited for the long one.
    @Test func finishedEntriesAreCommittedWithinASecond() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        var entries = (0..<199).map { ("/gen/c\($0)", Optional(TestOrigin.generated("c\($0)"))) }
        // Never answered within the test (its read timeout is longer than the answer takes).
        entries.append(("/slow/600000/gen/late", TestOrigin.generated("late")))
        let manifest = harness.manifest(entries)
        let process = try WorkerBinary.spawn(
            ["sync", manifest, "--cache-dir", harness.cache, "-q", "--read-timeout", "20m"],
            log: harness.directory.path + "/run.log")
        defer { kill(process.processIdentifier, SIGKILL) }
        var committed = 0
        // The long answer takes ten minutes: seen committed while it goes on is the point (before,
        // the 199 waited for it); a minute is what a loaded machine may need to start the runs.
        let deadline = Date().addingTimeInterval(60)
        repeat {
            try await Task.sleep(nanoseconds: 100_000_000)
            let status = try await WorkerBinary.run(["status", "--json", "--cache-dir", harness.cache])
            let json = try? JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
            committed = json?["entries"] as? Int ?? 0
        } while Date() < deadline && committed < 199
        #expect(process.isRunning, "the long answer is still on its way")
        #expect(committed == 199, "committed while the long download goes on: \(committed)")
        kill(process.processIdentifier, SIGKILL)
        await process.exited()
        // The next run finds them: only the killed download is asked for again (and runs into
        // the deadline here).
        let again = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "-q", "--deadline", "2s"])
        #expect(again.code == 1, "\(again.stderr)")
        #expect((0..<199).allSatisfy { harness.origin.hits("/gen/c\($0)") == 1 }, "none of the 199 fetched again")
    }

    /// Bytes appended to a cached object: a plain sync notices (a stat of each object against its
    /// row), fetches it again with a reason in the report, and ends with the right bytes.
    @Test func aChangedObjectIsFetchedAgain() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let entries = (0..<3).map { ("/f/o\($0)", Optional(harness.serve("o\($0)"))) }
        let manifest = harness.manifest(entries)
        #expect(try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "-q"]).code == 0)
        let damaged = harness.objectPath(sha256(entries[1].1!))
        chmod(damaged, 0o644)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: damaged))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("garbage\n".utf8))
        try handle.close()
        let report = harness.directory.path + "/r.json"
        let result = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--report", report])
        #expect(result.code == 0)
        #expect(result.stderr.contains("changed on disk"), "\(result.stderr)")
        #expect(harness.origin.hits("/f/o1") == 2 && harness.origin.hits("/f/o0") == 1)
        let json = try #require(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])
        let totals = try #require(json["totals"] as? [String: Any])
        #expect(totals["repaired"] as? Int == 1 && totals["updated"] as? Int == 1 && totals["unchanged"] as? Int == 2)
        let rows = try #require(json["entries"] as? [[String: Any]])
        let row = try #require(rows.first { ($0["url"] as? String) == harness.origin.url("/f/o1") })
        #expect(row["status"] as? String == "updated")
        #expect((row["refetched"] as? String)?.contains("changed on disk") == true)
        #expect(try Array(Data(contentsOf: URL(fileURLWithPath: damaged))) == entries[1].1!)
    }

    /// An output whose folder is missing or not writable is a usage error before any request.
    @Test func outputsAreCheckedBeforeAnyWork() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let manifest = harness.manifest([("/f/x", harness.serve("x"))])
        for option in ["--report", "--junit", "--metrics", "--summary-md", "--report-html"] {
            let result = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, option, "/nonexistent/dir/out"])
            #expect(result.code == 2)
            #expect(
                result.stderr.contains("\(option) '/nonexistent/dir/out'") && result.stderr.contains("does not exist"), "\(result.stderr)")
        }
        let get = try await WorkerBinary.run(["get", harness.origin.url("/f/x"), "--cache-dir", harness.cache, "-o", "/nonexistent/dir/x"])
        #expect(get.code == 2 && get.stderr.contains("/nonexistent/dir"), "\(get.stderr)")
        let list = harness.directory.write("urls.txt", harness.origin.url("/f/x") + "\n")
        let pin = try await WorkerBinary.run(["manifest", "--urls", list, "--cache-dir", harness.cache, "-o", "/nonexistent/dir/m.yaml"])
        #expect(pin.code == 2 && pin.stderr.contains("/nonexistent/dir"), "\(pin.stderr)")
        #expect(harness.origin.totalRequests == 0)
        #expect(try await WorkerBinary.run(["sync", CommandLineTests.demoManifest, "--cache-dir", harness.cache, "-q"]).code == 0)
        let verify = try await WorkerBinary.run(["verify", "--cache-dir", harness.cache, "--report", "/nonexistent/dir/v.json"])
        #expect(verify.code == 2 && verify.stderr.contains("does not exist"), "\(verify.stderr)")
    }

    /// A `get` of a 404 is pending in `status` until `rm URL` clears it, or a day passes; a
    /// manifest's failure stays until it clears.
    @Test func pendingFailuresClear() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let missing = harness.origin.url("/status/404")
        #expect(try await WorkerBinary.run(["get", missing, "--cache-dir", harness.cache]).code == 1)
        func pending() async throws -> Int {
            let status = try await WorkerBinary.run(["status", "--json", "--cache-dir", harness.cache])
            let json = try #require(JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
            return json["failed_pending"] as? Int ?? -1
        }
        #expect(try await pending() == 1)
        let text = try await WorkerBinary.run(["status", "--cache-dir", harness.cache]).stdout
        #expect(text.contains("only `worker get` asked for it"), "\(text)")
        let removed = try await WorkerBinary.run(["rm", missing, "--cache-dir", harness.cache])
        #expect(removed.code == 0 && removed.stdout.contains("cleared 1 pending failure"), "\(removed.stdout) \(removed.stderr)")
        #expect(try await pending() == 0)
        #expect(try await WorkerBinary.run(["rm", missing, "--cache-dir", harness.cache]).code == 1, "nothing left to remove")

        // Two days on: a get-only failure has aged out; a manifest's has not.
        let manifestURL = harness.origin.url("/status/410")
        let manifest = harness.manifest([("/status/410", nil)])
        #expect(try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "-q"]).code == 1)
        #expect(try await WorkerBinary.run(["get", missing, "--cache-dir", harness.cache]).code == 1)
        #expect(try await pending() == 2)
        let index = try CacheIndex(path: harness.cache + "/index.sqlite", create: false)
        let old = Date().timeIntervalSince1970 - 2 * 86400
        for (url, getOnly) in [(missing, true), (manifestURL, false)] {
            try index.apply(
                upserts: [], touches: [], removals: [],
                failures: [
                    FailureRecord(url: url, reason: "http", error: "old", attempts: 1, at: old, getOnly: getOnly)
                ], at: old)
        }
        #expect(try await pending() == 1)
    }
}
