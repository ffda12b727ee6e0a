import Foundation
import Glibc
import Testing
import WorkerTestSupport

/// What the suite did not exercise before: maintenance commands while a sync commits, a run past
/// one batch (by count and by bytes), an index another program holds busy, the connect timeout
/// end to end, `--prune-max`, and proxy variables (never used).
@Suite(.hangLimit) struct UntestedPathsTests {
    @Test func verifyGcRmAndClearWhileASyncCommits() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let other = harness.manifest([("/gen/other", TestOrigin.generated("other"))], name: "other.yaml")
        #expect(try await WorkerBinary.run(["sync", other, "--cache-dir", harness.cache, "-q"]).code == 0)
        let keys = (0..<300).map { "w\($0)" }
        // 300 answers of 10 ms, and one that takes ten minutes: the sync runs on after its first
        // commits for as long as the checks below take; it is stopped with SIGTERM at the end.
        let manifest = harness.manifest(
            keys.map { ("/slow/10/gen/\($0)", TestOrigin.generated($0)) }
                + [("/slow/600000/gen/late", TestOrigin.generated("late"))])
        let process = try WorkerBinary.spawn(
            ["sync", manifest, "--cache-dir", harness.cache, "-q", "-j", "2", "--read-timeout", "20m"],
            log: harness.directory.path + "/sync.log")
        // Once its first batch is in (a row besides the other manifest's), the sync commits every
        // half second while these run.
        var seen = 1
        while seen <= 1, process.isRunning {
            try await Task.sleep(nanoseconds: 20_000_000)
            seen = (try? harness.records().count) ?? 0
        }
        #expect(process.isRunning, "the sync was still running")
        let verify = try await WorkerBinary.run(["verify", "--cache-dir", harness.cache])
        #expect(verify.code == 0 && !verify.stdout.contains("stray") && !verify.stdout.contains("without its object"), "\(verify.stdout)")
        let gc = try await WorkerBinary.run(["gc", "--max-age", "1d", "--cache-dir", harness.cache])
        #expect(gc.code == 0, "\(gc.stderr)")
        let rm = try await WorkerBinary.run(["rm", harness.origin.url("/gen/other"), "--cache-dir", harness.cache])
        #expect(rm.code == 0, "\(rm.stderr)")
        #expect(process.isRunning, "the sync was still running")
        let clear = try await WorkerBinary.run(["clear", "--cache-dir", harness.cache, "--wait-lock", "0.3"])
        #expect(clear.code == 3, "clear waits for a running sync: \(clear.code) \(clear.stdout) \(clear.stderr)")
        // The 300 quick ones all end up committed; then the run is stopped.
        var committed = 0
        let deadline = Date().addingTimeInterval(120)
        while committed < 300, Date() < deadline {
            try await Task.sleep(nanoseconds: 50_000_000)
            committed = (try? harness.records().count) ?? 0
        }
        kill(process.processIdentifier, SIGTERM)
        await process.exited()
        #expect(process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGTERM)
        #expect(try harness.records().count == 300, "all but the late one, after a gc, an rm and a clear that waited")
        #expect(try await WorkerBinary.run(["verify", "--cache-dir", harness.cache]).code == 0)
    }

    /// A `gc` sweeps objects no row names, under the lock; a sync installs objects and names them
    /// under the lock too, so a gc running again and again beside a sync never deletes an object
    /// the sync is about to name (without the lock at the commit, it does).
    @Test func aGcRacingASyncNeverDeletesWhatItCommits() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let manifest = harness.manifest(
            (0..<3000).map { ("/gen/r\($0)", Optional(TestOrigin.generated("r\($0)"))) }
                + [("/slow/4000/gen/slow", TestOrigin.generated("slow"))])
        let first = harness.manifest([("/gen/first", TestOrigin.generated("first"))], name: "first.yaml")
        #expect(try await WorkerBinary.run(["sync", first, "--cache-dir", harness.cache, "-q"]).code == 0, "a cache for the gc below")
        let process = try WorkerBinary.spawn(
            ["sync", manifest, "--cache-dir", harness.cache, "-q", "-j", "8"],
            log: harness.directory.path + "/sync.log")
        // The collections start as processes of their own (not queued behind other tests' runs):
        // they must run while the sync does.
        var collections = 0
        while process.isRunning {
            let log = harness.directory.path + "/gc-\(collections).log"
            let gc = try WorkerBinary.spawn(["gc", "--cache-dir", harness.cache, "--wait-lock", "30"], log: log)
            await gc.exited()
            #expect(gc.terminationStatus == 0, "\((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
            collections += 1
        }
        await process.exited()
        #expect(process.terminationStatus == 0)
        #expect(collections >= 2, "the gc ran beside the sync")
        let verify = try await WorkerBinary.run(["verify", "--cache-dir", harness.cache])
        #expect(verify.code == 0 && !verify.stdout.contains("without its object"), "\(collections) collections: \(verify.stdout)")
        #expect(try harness.records().count == 3002)
    }

    /// 5,200 entries (a batch is at most 1,024) and three 25 MiB bodies (a batch closes at 64 MiB).
    @Test func aRunPastOneBatchByCountAndByBytes() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        var entries = (0..<5200).map { ("/gen/b\($0)", Optional(TestOrigin.generated("b\($0)"))) }
        for number in 0..<3 {
            let big = [UInt8](repeating: UInt8(number + 1), count: 25 << 20)
            harness.origin.set("/f/big\(number)", big)
            entries.append(("/f/big\(number)", big))
        }
        let manifest = harness.manifest(entries)
        let report = harness.directory.path + "/r.json"
        let result = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--report", report, "-q"])
        #expect(result.code == 0, "\(result.stderr)")
        #expect(try harness.records().count == 5203)
        #expect(try await WorkerBinary.run(["verify", "--cache-dir", harness.cache]).code == 0)
        let again = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache])
        #expect(again.code == 0, "\(again.stderr)")
        #expect(again.stdout.contains("unchanged 5203"), "\(again.stdout)")
    }

    /// Another program holding the index's write lock (SQLite's, not worker's) for a second: the
    /// commit waits it out (SQLite's busy timeout) and the run succeeds.
    @Test func anIndexHeldBusyByAnotherProgramIsWaitedFor() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let first = harness.manifest([("/gen/a", TestOrigin.generated("a"))], name: "a.yaml")
        #expect(try await WorkerBinary.run(["sync", first, "--cache-dir", harness.cache, "-q"]).code == 0)
        let holder = try WorkerBinary.spawn(
            [
                "-c",
                """
                import sqlite3, sys, time
                db = sqlite3.connect(sys.argv[1], isolation_level=None)
                db.execute("BEGIN IMMEDIATE")
                open(sys.argv[2], "w").close()
                time.sleep(1.5)
                db.execute("COMMIT")
                """, harness.cache + "/index.sqlite", harness.directory.path + "/held",
            ],
            log: harness.directory.path + "/holder.log", executable: "/usr/bin/python3")
        while !FileManager.default.fileExists(atPath: harness.directory.path + "/held"), holder.isRunning {
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        let second = harness.manifest([("/gen/b", TestOrigin.generated("b"))], name: "b.yaml")
        let result = try await WorkerBinary.run(["sync", second, "--cache-dir", harness.cache])
        #expect(result.code == 0, "\(result.stderr)")
        await holder.exited()
        #expect(try harness.records().count == 2)
    }

    /// A listener that never accepts (its backlog full): the connect times out at
    /// --connect-timeout and says so.
    @Test func theConnectTimeoutEndToEnd() async throws {
        let directory = TemporaryDirectory()
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        #expect(listen(listener, 0) == 0)
        let port = Int(UInt16(bigEndian: address.sin_port))
        // Fill the backlog with connections nobody accepts; the next SYN is dropped.
        var fillers: [Int32] = []
        defer { fillers.forEach { close($0) } }
        for _ in 0..<8 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            var target = address
            target.sin_port = UInt16(port).bigEndian
            _ = withUnsafePointer(to: &target) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            fillers.append(fd)
        }
        try await Task.sleep(nanoseconds: 200_000_000)
        let manifest = directory.write("m.yaml", "version: 1\nentries:\n  - url: http://127.0.0.1:\(port)/a.png\n")
        let report = directory.path + "/r.json"
        let result = try await WorkerBinary.run([
            "sync", manifest, "--cache-dir", directory.path + "/cache", "--connect-timeout", "1",
            "--retries", "0", "--report", report,
        ])
        #expect(result.code == 1)
        #expect(result.stderr.contains("connect timeout"), "\(result.stderr)")
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])
        let seconds = try #require(document["duration_seconds"] as? Double)
        #expect(seconds >= 0.9 && seconds < 10, "the connect gave up at its timeout: \(seconds) s")
    }

    /// `--prune-max`: a prune that would remove more than its share of the cache is refused whole,
    /// naming the cap (exit 1); `--force` lifts it.
    @Test func pruneMaxRefusesALargePruneUnlessForced() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let all = harness.manifest((0..<10).map { ("/gen/p\($0)", Optional(TestOrigin.generated("p\($0)"))) }, name: "all.yaml")
        #expect(try await WorkerBinary.run(["sync", all, "--cache-dir", harness.cache, "-q"]).code == 0)
        let few = harness.manifest((0..<3).map { ("/gen/p\($0)", Optional(TestOrigin.generated("p\($0)"))) }, name: "few.yaml")
        let refused = try await WorkerBinary.run(["sync", few, "--cache-dir", harness.cache, "--prune", "--prune-max", "50%"])
        #expect(refused.code == 1, "\(refused.stderr)")
        #expect(refused.stderr.contains("--prune-max") || refused.stdout.contains("--prune-max"), "\(refused.stdout) \(refused.stderr)")
        #expect(try harness.records().count == 10, "nothing pruned")
        let allowed = try await WorkerBinary.run(["sync", few, "--cache-dir", harness.cache, "--prune", "--prune-max", "80%"])
        #expect(allowed.code == 0, "\(allowed.stderr)")
        #expect(try harness.records().count == 3)
    }

    /// Proxy variables from the environment are never used: a manifest's origins are reached
    /// directly (a proxy that would answer everything is never asked).
    @Test func proxyVariablesAreIgnored() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let proxy = try await TestOrigin.start()
        defer { Task { await proxy.stop() } }
        let bytes = harness.serve("direct")
        let manifest = harness.manifest([("/f/direct", bytes)])
        let url = proxy.url("")
        let result = try await WorkerBinary.run(
            ["sync", manifest, "--cache-dir", harness.cache],
            environment: [
                "http_proxy": url, "HTTP_PROXY": url, "https_proxy": url,
                "ALL_PROXY": url, "all_proxy": url,
            ])
        #expect(result.code == 0, "\(result.stderr)")
        #expect(proxy.totalRequests == 0, "the proxy was asked")
        #expect(harness.origin.hits("/f/direct") == 1)
    }
}
