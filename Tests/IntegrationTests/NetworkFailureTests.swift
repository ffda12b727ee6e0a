import Foundation
import Testing
import WorkerManifest
import WorkerTestSupport

@testable import WorkerFetch
@testable import WorkerStore
@testable import WorkerSupport

/// The everyday failures of real networks, through the built binary: refused ports, dead and
/// sick origins, servers that encode bodies nobody asked for.
@Suite(.hangLimit) struct NetworkFailureTests {
    private func report(_ path: String) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
    }

    @Test func aRefusedConnectionFailsAtOnceAndSaysSo() async throws {
        let directory = TemporaryDirectory()
        let refusing = RefusingPort()
        defer { refusing.release() }
        let manifest = directory.write("m.yaml", "version: 1\nentries:\n  - url: \(refusing.origin)/a.png\n")
        let result = try await WorkerBinary.run([
            "sync", manifest, "--cache-dir", directory.path + "/cache",
            "--connect-timeout", "30", "--report", directory.path + "/r.json",
        ])
        let elapsed = try #require(try report(directory.path + "/r.json")["duration_seconds"] as? Double)
        #expect(result.code == 1)
        #expect(result.stderr.contains("connection refused"), "\(result.stderr)")
        #expect(!result.stderr.contains("errno"), "plain words: \(result.stderr)")
        let entry = try #require((try report(directory.path + "/r.json")["entries"] as? [[String: Any]])?.first)
        #expect(entry["reason"] as? String == "connection")
        #expect(entry["attempts"] as? Int == 4, "the default retries still apply")
        // Not a speed goal: each attempt waited the whole connect timeout before (here 4 × 30 s);
        // the run's own clock says none did.
        #expect(elapsed < 30, "\(elapsed) s")
    }

    @Test func aDeadOriginFailsFastAndIsProbedNextTime() async throws {
        let healthy = try await Harness.start()
        defer { Task { await healthy.origin.stop() } }
        let refusing = RefusingPort()
        defer { refusing.release() }
        let port = refusing.port
        var text = "version: 1\nentries:\n"
        for number in 0..<300 { text += "  - url: \(refusing.origin)/u/\(number).png\n" }
        for number in 0..<5 {
            text += "  - url: \(healthy.origin.url("/gen/h\(number)"))\n    hash: sha256:\(sha256(TestOrigin.generated("h\(number)")))\n"
        }
        let manifest = healthy.directory.write("mixed.yaml", text)
        let reportPath = healthy.directory.path + "/r.json"
        let first = try await WorkerBinary.run(["sync", manifest, "--cache-dir", healthy.cache, "--report", reportPath])
        #expect(first.code == 1)
        let document = try report(reportPath)
        let totals = try #require(document["totals"] as? [String: Any])
        #expect(totals["added"] as? Int == 5 && totals["failed"] as? Int == 300, "\(totals)")
        let origins = try #require(document["unreachable_origins"] as? [[String: Any]])
        #expect(origins.count == 1 && origins.first?["origin"] as? String == "http://127.0.0.1:\(port)")
        #expect((origins.first?["not_tried"] as? Int ?? 0) > 200, "most entries were not tried: \(origins)")
        // stderr: one line for the origin, a handful of entries, then how many more.
        let lines = first.stderr.split(separator: "\n")
        #expect(lines.filter { $0.hasPrefix("origin unreachable: http://127.0.0.1:\(port)") }.count == 1, "\(first.stderr)")
        #expect(lines.filter { $0.hasPrefix("failed: ") }.count == 5, "\(first.stderr)")
        #expect(lines.contains("… and 295 more (see the report)"), "\(first.stderr)")
        #expect(lines.count <= 12, "\(lines.count) lines on stderr")

        let status = try await WorkerBinary.run(["status", "--cache-dir", healthy.cache])
        #expect(status.code == 0, "\(status.stderr)")
        #expect(status.stdout.contains("unhealthy  http://127.0.0.1:\(port) since"), "\(status.stdout)")

        // The origin comes back: the next run probes it, then syncs everything from it.
        refusing.release()
        let revived = try await TestOrigin.start(port: port)
        defer { Task { await revived.stop() } }
        for number in 0..<300 { revived.set("/u/\(number).png", "avatar \(number)\n") }
        let second = try await WorkerBinary.run(["sync", manifest, "--cache-dir", healthy.cache])
        #expect(second.code == 0, "\(second.stderr)")
        #expect(second.stdout.contains("added 300"), "\(second.stdout)")
        let after = try await WorkerBinary.run(["status", "--cache-dir", healthy.cache])
        #expect(after.code == 0, "\(after.stderr)")
        #expect(!after.stdout.contains("unhealthy"), "forgotten once it answers")
    }

    @Test func aFailingOriginIsNotHammered() async throws {
        let sick = try await Harness.start()
        let healthy = try await TestOrigin.start()
        defer {
            Task {
                await sick.origin.stop(); await healthy.stop()
            }
        }
        var text = "version: 1\nentries:\n"
        for number in 0..<300 { text += "  - url: \(sick.origin.url("/status/503?n=\(number)"))\n" }
        for number in 0..<5 { text += "  - url: \(healthy.url("/gen/ok\(number)"))\n" }
        let manifest = sick.directory.write("sick.yaml", text)
        let first = try await WorkerBinary.run(["sync", manifest, "--cache-dir", sick.cache, "--report", sick.directory.path + "/r.json"])
        let elapsed = try #require(try report(sick.directory.path + "/r.json")["duration_seconds"] as? Double)
        #expect(first.code == 1)
        #expect(sick.origin.totalRequests <= 150, "\(sick.origin.totalRequests) requests for 300 entries")
        // Each of 300 entries retried with backoff one after another would take minutes.
        #expect(elapsed < 20, "\(elapsed) s")
        #expect(first.stdout.contains("added 5"), "\(first.stdout)")
        #expect(first.stderr.contains("origin unreachable: \(Origin.of(sick.origin.url("/")).name)"))

        // Remembered: the next run sends one probe, not its whole share.
        let before = sick.origin.totalRequests
        let second = try await WorkerBinary.run(["sync", manifest, "--cache-dir", sick.cache])
        #expect(second.code == 1)
        #expect(sick.origin.totalRequests - before == 1, "\(sick.origin.totalRequests - before) requests")
    }

    @Test func retryAfterPausesTheWholeOrigin() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        var text = "version: 1\nentries:\n"
        for number in 0..<40 { text += "  - url: \(harness.origin.url("/flaky/1000/429/f/x\(number)?retry-after=1"))\n" }
        let manifest = harness.directory.write("busy.yaml", text)
        let started = Date()
        let result = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "-j", "8"])
        let elapsed = Date().timeIntervalSince(started)
        #expect(result.code == 1)
        // Each wave waits for the pause the origin asked for; the breaker ends it after a few.
        #expect(elapsed >= 1, "Retry-After honoured")
        #expect(harness.origin.totalRequests < 80, "\(harness.origin.totalRequests) requests for 40 entries")
    }

    @Test func encodedBodiesAreNeverStored() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let bytes = harness.serve("plain")
        let asked = harness.manifest([("/f/plain", bytes)], name: "asked.yaml", extra: "headers:\n  Accept-Encoding: gzip\n")
        let refused = try await WorkerBinary.run(["sync", asked, "--cache-dir", harness.cache])
        #expect(refused.code == 2)
        #expect(refused.stderr.contains("asked.yaml:4:3") && refused.stderr.contains("Accept-Encoding"), "\(refused.stderr)")
        for header in ["Range: bytes=0-10", "TE: gzip", "If-None-Match: x"] {
            let other = harness.manifest([("/f/plain", bytes)], name: "other.yaml", extra: "headers:\n  \(header)\n")
            #expect(try await WorkerBinary.run(["plan", other]).code == 2, "\(header)")
        }
        #expect(harness.origin.totalRequests == 0)

        let sent = harness.manifest([("/encoded/f/plain", nil)], name: "sent.yaml")
        let result = try await WorkerBinary.run([
            "sync", sent, "--cache-dir", harness.cache, "--report", harness.directory.path + "/r.json",
        ])
        #expect(result.code == 1)
        #expect(result.stderr.contains("Content-Encoding: gzip"), "\(result.stderr)")
        #expect(harness.objects().isEmpty, "the encoded bytes were not stored")
        #expect(harness.origin.hits("/encoded/f/plain") == 1, "not retried: the answer would be the same")
    }

    @Test func ordinaryUpdatesLeaveACleanCache() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let first = harness.serve("a", "version one\n")
        #expect(try await WorkerBinary.run(["sync", harness.manifest([("/f/a", first)]), "--cache-dir", harness.cache]).code == 0)
        let second = harness.serve("a", "version two, longer\n")
        #expect(try await WorkerBinary.run(["sync", harness.manifest([("/f/a", second)]), "--cache-dir", harness.cache]).code == 0)
        #expect(harness.objects() == [sha256(second)], "the previous version is gone once nothing names it")
        let verify = try await WorkerBinary.run(["verify", "--cache-dir", harness.cache])
        #expect(verify.code == 0, "\(verify.stdout)")
        let status = try await WorkerBinary.run(["status", "--json", "--cache-dir", harness.cache])
        let numbers = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        #expect(numbers["bytes"] as? Int == second.count, "status counts what objects/ holds")

        // A crash between installing an object and indexing it: the next sync sweeps it.
        let orphan = Array("left by a crash\n".utf8)
        let orphanPath = harness.objectPath(sha256(orphan))
        _ = FileManager.default.createFile(atPath: orphanPath, contents: Data(orphan))
        let unreferenced = try await WorkerBinary.run(["verify", "--cache-dir", harness.cache])
        #expect(unreferenced.code == 0, "an unindexed object is no real problem")
        #expect(unreferenced.stdout.contains("1 object no entry names"), "\(unreferenced.stdout)")
        // The next sync removes it: a small cache is listed every run.
        #expect(try await WorkerBinary.run(["sync", harness.manifest([("/f/a", second)]), "--cache-dir", harness.cache]).code == 0)
        #expect(!FileManager.default.fileExists(atPath: orphanPath))
        // And after an interrupted run (its mark), whatever the cache's size.
        _ = FileManager.default.createFile(atPath: orphanPath, contents: Data(orphan))
        _ = FileManager.default.createFile(atPath: harness.cache + "/unclean", contents: nil)
        #expect(try await WorkerBinary.run(["sync", harness.manifest([("/f/a", second)]), "--cache-dir", harness.cache]).code == 0)
        #expect(!FileManager.default.fileExists(atPath: orphanPath))
        #expect(!FileManager.default.fileExists(atPath: harness.cache + "/unclean"))
        // gc sweeps them whatever the mark says.
        _ = FileManager.default.createFile(atPath: orphanPath, contents: Data(orphan))
        let gc = try await WorkerBinary.run(["gc", "--cache-dir", harness.cache])
        #expect(gc.code == 0 && gc.stdout.contains("removed 1 objects an interrupted sync left unindexed"), "\(gc.stdout)")
        #expect(harness.objects() == [sha256(second)])
    }

    @Test func outputsNeverOverwriteInputs() async throws {
        let directory = TemporaryDirectory()
        let manifestA = directory.write("a.yaml", "# the first manifest\nversion: 1\nentries: []\n")
        let manifestB = directory.write("b.yaml", "version: 1\nentries: []\n")
        let before = try String(contentsOfFile: manifestA, encoding: .utf8)
        let cache = directory.path + "/cache"
        // `worker sync --report manifests/*.yaml`: the shell gives the first manifest to --report.
        let swallowed = try await WorkerBinary.run(["sync", "--report", manifestA, manifestB, "--cache-dir", cache])
        #expect(swallowed.code == 2)
        #expect(swallowed.stderr.contains("not an earlier --report output"), "\(swallowed.stderr)")
        #expect(try String(contentsOfFile: manifestA, encoding: .utf8) == before)
        #expect(!FileManager.default.fileExists(atPath: cache), "nothing synced")
        let same = try await WorkerBinary.run(["sync", manifestB, "--junit", manifestB, "--cache-dir", cache])
        #expect(same.code == 2 && same.stderr.contains("is a manifest of this run"), "\(same.stderr)")

        let notes = directory.write("notes.txt", "my notes\n")
        for option in ["--report", "--junit", "--summary-md", "--metrics", "--report-html"] {
            let result = try await WorkerBinary.run(["sync", manifestB, option, notes, "--cache-dir", cache])
            #expect(result.code == 2, "\(option)")
        }
        #expect(try String(contentsOfFile: notes, encoding: .utf8) == "my notes\n")
        // An earlier output of the same kind is replaced as before.
        let outputs = ["--report": "r.json", "--junit": "j.xml", "--summary-md": "s.md", "--metrics": "m.prom", "--report-html": "h.html"]
        for (option, name) in outputs {
            let path = directory.path + "/" + name
            #expect(try await WorkerBinary.run(["sync", manifestB, option, path, "--cache-dir", cache]).code == 0, "\(option)")
            let again = try await WorkerBinary.run(["sync", manifestB, option, path, "--cache-dir", cache])
            #expect(again.code == 0, "\(option) replaces its own earlier output: \(again.stderr)")
        }
        // A report of one kind does not replace another kind's.
        let crossed = try await WorkerBinary.run(["sync", manifestB, "--junit", directory.path + "/r.json", "--cache-dir", cache])
        #expect(crossed.code == 2)
    }

    @Test func waitingForTheLockIsSaid() async throws {
        let directory = TemporaryDirectory()
        let cache = directory.path + "/cache"
        #expect(try await WorkerBinary.run(["sync", CommandLineTests.demoManifest, "--cache-dir", cache]).code == 0)
        let held = try await CacheLock(directory: cache, wait: 0, context: RunContext())
        let result = try await WorkerBinary.run(["sync", CommandLineTests.demoManifest, "--cache-dir", cache, "--wait-lock", "1"])
        #expect(result.code == 3)
        #expect(result.stderr.contains("waiting for the cache lock") && result.stderr.contains("pid \(getpid())"), "\(result.stderr)")
        withExtendedLifetime(held) {}
    }

    @Test func progressGoesOnWhileNothingFinishes() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        harness.serve("late")
        let manifest = harness.manifest([("/slow/6500/f/late", nil)])
        let result = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--progress", "always"])
        #expect(result.code == 0)
        let progress = result.stderr.split(separator: "\n").filter { $0.hasPrefix("progress: ") }
        #expect(progress.first?.hasPrefix("progress: 0/1 entries") == true, "a line at 5 s while the entry waits: \(result.stderr)")
        #expect(progress.first?.contains("ETA --") == true, "no estimate from nothing")
        #expect(progress.last?.hasPrefix("progress: 1/1 entries") == true)
    }

    @Test func wrongPathsAndWordsAreNamed() async throws {
        let directory = TemporaryDirectory()
        let missing = directory.path + "/no-such-cache"
        for command in [
            ["status"], ["path", "https://example.com/a"], ["gc"], ["verify"], ["export", "--layout", "hash", directory.path + "/x"],
            ["rm", "https://example.com/a"], ["clear"],
        ] {
            let result = try await WorkerBinary.run(command + ["--cache-dir", missing])
            #expect(result.code == 4, "\(command)")
            #expect(result.stderr.contains("no cache at \(missing)"), "\(command): \(result.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: missing), "nothing created")
        let typo = try await WorkerBinary.run(["snyc", "m.yaml"])
        #expect(typo.code == 2)
        #expect(typo.stderr.contains("unknown command 'snyc'; did you mean 'sync'?"), "\(typo.stderr)")
        let folder = try await WorkerBinary.run(["plan", directory.path])
        #expect(folder.code == 2 && folder.stderr.contains("is a directory"), "\(folder.stderr)")
        let json = try await WorkerBinary.run(["sync", directory.path, "--log-format", "json"])
        let object = try JSONSerialization.jsonObject(
            with: Data(json.stderr.split(separator: "\n").first.map(String.init)?.utf8 ?? "".utf8))
        #expect((object as? [String: Any])?["message"] as? String != nil, "\(json.stderr)")
    }

    @Test func gcDryRunSaysHowManyMore() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let keys = (0..<30).map { "g\($0)" }
        #expect(
            try await WorkerBinary.run([
                "sync", harness.manifest(keys.map { ("/gen/\($0)", TestOrigin.generated($0)) }),
                "--cache-dir", harness.cache,
            ]).code == 0)
        let result = try await WorkerBinary.run(["gc", "--max-size", "1", "--dry-run", "--cache-dir", harness.cache])
        #expect(result.code == 0)
        #expect(result.stdout.contains("… and 10 more (--json lists them all)"), "\(result.stdout)")
    }

    @Test func deadlineFailuresNameTheDeadline() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        harness.serve("s")
        let manifest = harness.manifest((0..<3).map { ("/slow/3000/f/s?\($0)", nil) })
        let result = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--deadline", "1", "-j", "1"])
        #expect(result.code == 1)
        #expect(result.stderr.contains("--deadline 1s"), "\(result.stderr)")
    }

    /// Two URLs of the same content are one group, tried in turn; a deadline that stops the first
    /// leaves the second not started, and both are in the report as failed, none left out.
    @Test func aGroupStoppedMidwayAccountsForEveryMember() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let bytes = harness.serve("twin", String(repeating: "t", count: 79) + "\n")
        let manifest = harness.manifest([("/drip/100/f/twin", bytes), ("/f/twin", bytes)])
        let report = harness.directory.path + "/r.json"
        let result = try await WorkerBinary.run([
            "sync", manifest, "--cache-dir", harness.cache, "--deadline", "1",
            "--report", report,
        ])
        #expect(result.code == 1, "\(result.stderr)")
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])
        let entries = try #require(document["entries"] as? [[String: Any]])
        #expect(
            entries.count == 2 && entries.allSatisfy { $0["status"] as? String == "failed" && $0["reason"] as? String == "cancelled" },
            "\(entries)")
        #expect((entries.last?["error"] as? String)?.hasSuffix("before this entry started") == true, "\(entries)")
        #expect((document["totals"] as? [String: Any])?["failed"] as? Int == 2)
    }

    @Test func networkFileSystemsUseARollbackJournal() async throws {
        let directory = TemporaryDirectory()
        let cache = directory.path + "/cache"
        let result = try await WorkerBinary.run(
            ["sync", CommandLineTests.demoManifest, "--cache-dir", cache],
            environment: ["WORKER_NETWORK_FS": "1"])
        #expect(result.code == 0, "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: cache + "/index.sqlite-wal"), "no WAL on a network file system")
        let index = try CacheIndex(path: cache + "/index.sqlite", create: false, readOnly: true)
        #expect(try index.journalMode() == "delete")
        let status = try await WorkerBinary.run(["status", "--cache-dir", cache], environment: ["WORKER_NETWORK_FS": "1"])
        #expect(status.code == 0, "\(status.stderr)")
        #expect(status.stdout.contains("rollback journal"), "\(status.stdout)")
        #expect(FileSystemKind.of("/", environment: [:]) == .local, "this machine's disk is local")
    }
}
