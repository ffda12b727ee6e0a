import Crypto
import Foundation
import Testing
import WorkerTestSupport

/// `--remote-cache` and `worker push` through the built binary: nginx with WebDAV as the shared
/// tier (docs/REMOTE-CACHE.md), the in-process test origin as the origin and as a faulty tier.
@Suite(.hangLimit) struct RemoteCacheTests {
    private static func body(_ number: Int) -> [UInt8] {
        (0..<(1500 + number * 97)).map { UInt8(truncatingIfNeeded: $0 &* (number + 3) &+ 11) }
    }

    /// An origin serving `count` files, and a manifest pinning each by SHA-256 (plus `extra` lines).
    private func fixture(
        _ origin: TestOrigin, _ directory: TemporaryDirectory, count: Int,
        header: String = "", extra: [(String, String?)] = []
    ) -> (manifest: String, hashes: [String]) {
        var text = "version: 1\nname: avatars\n\(header)entries:\n"
        var hashes: [String] = []
        for number in 0..<count {
            let bytes = Self.body(number)
            origin.set("/a/\(number).png", bytes)
            hashes.append(sha256(bytes))
            text += "  - url: \(origin.url("/a/\(number).png"))\n    hash: sha256:\(sha256(bytes))\n"
        }
        for (url, hash) in extra {
            text += "  - url: \(url)\n"
            if let hash { text += "    hash: \(hash)\n" }
        }
        return (directory.write("m.yaml", text), hashes)
    }

    private func md5Hex(_ bytes: [UInt8]) -> String {
        Insecure.MD5.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }

    private func json(_ path: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
    }

    private func rows(_ report: [String: Any]) -> [[String: Any]] {
        report["entries"] as? [[String: Any]] ?? []
    }

    private func originRequests(_ origin: TestOrigin, _ count: Int) -> Int {
        (0..<count).reduce(0) { $0 + origin.hits("/a/\($1).png") }
    }

    // MARK: - Read and write

    /// The tier is a cache beside the sources: asked before them, whatever became of the origin.
    /// With the origin refusing every connection and remembered as given up by an earlier run,
    /// what the tier holds still comes from the tier; only what it lacks fails.
    @Test func theTierServesWhatItHasWhenTheOriginIsDown() async throws {
        let tier = try WebDAVTier()
        defer { tier.stop() }
        let directory = TemporaryDirectory()
        let refusing = RefusingPort()
        defer { refusing.release() }
        let dead = refusing.origin
        var text = "version: 1\nname: down\nentries:\n"
        for number in 0..<40 {
            let bytes = Self.body(number)
            // The tier lacks the first ten.
            if number >= 10 { tier.store(sha256(bytes), bytes) }
            text += "  - url: \(dead)/a/\(number).png\n    hash: sha256:\(sha256(bytes))\n"
        }
        let manifest = directory.write("m.yaml", text)
        // An earlier run without the tier: every entry fails, and the cache remembers the origin as down.
        let earlier = try await WorkerBinary.run(["sync", manifest, "--cache-dir", directory.path + "/c", "--retries", "0"])
        #expect(earlier.code == 1)
        let report = directory.path + "/r.json"
        let run = try await WorkerBinary.run([
            "sync", manifest, "--cache-dir", directory.path + "/c", "--remote-cache", tier.url,
            "--retries", "0", "--report", report,
        ])
        #expect(run.code == 1, "\(run.stderr)")
        let entries = rows(try json(report))
        let failed = entries.filter { $0["status"] as? String == "failed" }.compactMap { $0["url"] as? String }
        #expect(Set(failed) == Set((0..<10).map { "\(dead)/a/\($0).png" }), "only what the tier lacks fails: \(failed)")
        let fromTier = entries.filter { $0["source"] as? String == "remote" }
        #expect(fromTier.count == 30, "\(entries)")
    }

    @Test func runnerAFillsTheTierAndRunnerBTakesEverythingFromIt() async throws {
        let tier = try WebDAVTier()
        defer { tier.stop() }
        let origin = try await TestOrigin.start()
        let directory = TemporaryDirectory()
        let (manifest, hashes) = fixture(origin, directory, count: 6)

        let reportA = directory.path + "/a.json"
        let a = try await WorkerBinary.run([
            "sync", manifest, "--cache-dir", directory.path + "/a", "--remote-cache", tier.url + "/",
            "--report", reportA, "--metrics", directory.path + "/a.prom",
        ])
        #expect(a.code == 0, "\(a.stderr)")
        let first = try json(reportA)
        let remoteA = try #require(first["remote_cache"] as? [String: Any])
        #expect(remoteA["misses"] as? Int == 6 && remoteA["hits"] as? Int == 0)
        #expect(remoteA["uploads"] as? Int == 6 && remoteA["upload_errors"] as? Int == 0, "\(remoteA)")
        #expect(rows(first).allSatisfy { $0["source"] as? String == "origin" }, "\(rows(first))")
        // Every object went up under its SHA-256, byte for byte (one slash before cas/).
        #expect(tier.objects == hashes.sorted())
        for (number, hash) in hashes.enumerated() { #expect(tier.object(hash) == Data(Self.body(number))) }
        #expect(tier.requests.filter { $0.hasPrefix("PUT /cas/") }.count == 6, "\(tier.requests)")
        #expect(!tier.requests.contains { $0.contains("//cas") })
        #expect(a.stdout.contains("remote cache \(tier.url): 0 hits"), "\(a.stdout)")
        let metrics = try String(contentsOfFile: directory.path + "/a.prom", encoding: .utf8)
        #expect(metrics.contains("worker_remote_cache_uploads{"), "\(metrics)")

        // Runner B: a fresh cache, every body from the tier, no request to the origin.
        let before = originRequests(origin, 6)
        let reportB = directory.path + "/b.json"
        let b = try await WorkerBinary.run([
            "sync", manifest, "--cache-dir", directory.path + "/b", "--remote-cache", tier.url,
            "--report", reportB, "--metrics", directory.path + "/b.prom", "--verbose",
        ])
        #expect(b.code == 0, "\(b.stderr)")
        #expect(
            b.stderr.split(separator: "\n").filter { $0.contains("entry fetched") && $0.contains("entry.source=remote") }.count == 6,
            "--verbose says where each body came from: \(b.stderr)")
        #expect(originRequests(origin, 6) == before, "runner B asked the origin")
        let second = try json(reportB)
        let remoteB = try #require(second["remote_cache"] as? [String: Any])
        #expect(remoteB["hits"] as? Int == 6 && remoteB["misses"] as? Int == 0 && remoteB["uploads"] as? Int == 0, "\(remoteB)")
        #expect(
            rows(second).count == 6 && rows(second).allSatisfy { $0["source"] as? String == "remote" && $0["status"] as? String == "added" }
        )
        #expect(b.stdout.contains("from the remote cache"), "\(b.stdout)")
        let metricsB = try String(contentsOfFile: directory.path + "/b.prom", encoding: .utf8)
        #expect(metricsB.contains("worker_remote_cache_hits{") && metricsB.contains("} 6"), "\(metricsB)")
        // What B stored is what the manifest pins.
        let verify = try await WorkerBinary.run(["verify", "--cache-dir", directory.path + "/b"])
        #expect(verify.code == 0, "\(verify.stdout) \(verify.stderr)")

        // `get` of a pinned URL into a third cache: from the tier too.
        let got = try await WorkerBinary.run(
            [
                "get", origin.url("/a/2.png"), "--hash", "sha256:" + hashes[2],
                "--cache-dir", directory.path + "/g",
            ], environment: ["WORKER_REMOTE_CACHE": tier.url])
        #expect(got.code == 0, "\(got.stderr)")
        let path = got.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(FileManager.default.contents(atPath: path) == Data(Self.body(2)))
        #expect(originRequests(origin, 6) == before, "get asked the origin")
        await origin.stop()
    }

    @Test func readOnlyNeverWritesAndEntriesWithoutASHA256NeverAskTheTier() async throws {
        let tier = try await TestOrigin.start()
        let origin = try await TestOrigin.start()
        let directory = TemporaryDirectory()
        origin.set("/md5.png", Array("md5".utf8))
        origin.set("/plain.png", Array("plain".utf8))
        let (manifest, _) = fixture(
            origin, directory, count: 3,
            extra: [
                (origin.url("/md5.png"), "md5:\(md5Hex(Array("md5".utf8)))"), (origin.url("/plain.png"), nil),
            ])
        let report = directory.path + "/r.json"
        let run = try await WorkerBinary.run(
            ["sync", manifest, "--cache-dir", directory.path + "/c", "--report", report],
            environment: ["WORKER_REMOTE_CACHE": tier.url("/team")])
        #expect(run.code == 0, "\(run.stderr)")
        let remote = try #require(try json(report)["remote_cache"] as? [String: Any])
        // The three pinned by SHA-256 were looked up (404 from this tier) — the others never.
        #expect(remote["misses"] as? Int == 3, "\(remote)")
        // (This tier stores nothing: each of the three got a lookup and an upload, refused with
        // 404; the first refusal made the run try once to make the tier's collections (MKCOL
        // /team/, refused too, so no more), and the uploads failed.)
        #expect(tier.totalRequests == 7, "the tier got \(tier.totalRequests) requests")
        #expect(remote["upload_errors"] as? Int == 3, "\(remote)")

        let readOnly = TemporaryDirectory()
        let (manifest2, _) = fixture(origin, readOnly, count: 3)
        let before = tier.totalRequests
        let quiet = try await WorkerBinary.run([
            "sync", manifest2, "--cache-dir", readOnly.path + "/c", "--remote-cache", tier.url("/team"),
            "--remote-cache-read-only", "--report", readOnly.path + "/r.json",
        ])
        #expect(quiet.code == 0, "\(quiet.stderr)")
        #expect(tier.totalRequests - before == 3, "read-only: three lookups, no upload")
        let summary = try #require(try json(readOnly.path + "/r.json")["remote_cache"] as? [String: Any])
        #expect(summary["read_only"] as? Bool == true && summary["uploads"] as? Int == 0)
        await tier.stop()
        await origin.stop()
    }

    @Test func pushSeedsATierFromAnExistingCache() async throws {
        let tier = try WebDAVTier()
        defer { tier.stop() }
        let origin = try await TestOrigin.start()
        let directory = TemporaryDirectory()
        let (manifest, hashes) = fixture(origin, directory, count: 5)
        let cache = directory.path + "/full"
        #expect(try await WorkerBinary.run(["sync", manifest, "--cache-dir", cache]).code == 0)
        tier.store(hashes[0], Self.body(0))

        let push = try await WorkerBinary.run(["push", "--cache-dir", cache, "--remote-cache", tier.url, "--progress", "never"])
        #expect(push.code == 0, "\(push.stderr)")
        #expect(
            push.stdout.contains("5 objects") && push.stdout.contains("4 uploaded") && push.stdout.contains("1 already there"),
            "\(push.stdout)")
        #expect(tier.objects == hashes.sorted())
        #expect(tier.requests.filter { $0.hasPrefix("HEAD /cas/") }.count == 5)
        #expect(tier.requests.filter { $0.hasPrefix("PUT /cas/") }.count == 4)
        let again = try await WorkerBinary.run(["push", "--cache-dir", cache, "--remote-cache", tier.url, "--progress", "never"])
        #expect(again.code == 0 && again.stdout.contains("0 uploaded") && again.stdout.contains("5 already there"), "\(again.stdout)")

        // A fresh runner now needs nothing from the origin.
        let before = originRequests(origin, 5)
        let fresh = try await WorkerBinary.run(["sync", manifest, "--cache-dir", directory.path + "/fresh", "--remote-cache", tier.url])
        #expect(fresh.code == 0 && originRequests(origin, 5) == before, "\(fresh.stderr)")

        // `manifest --urls` seeds the tier with what it pins.
        origin.set("/new.png", Self.body(40))
        let list = directory.write("urls.txt", origin.url("/new.png") + "\n")
        let pinned = try await WorkerBinary.run([
            "manifest", "--urls", list, "--cache-dir", directory.path + "/pin",
            "--remote-cache", tier.url, "-o", directory.path + "/pinned.yaml",
        ])
        #expect(pinned.code == 0, "\(pinned.stderr)")
        #expect(tier.object(sha256(Self.body(40))) == Data(Self.body(40)), "manifest --urls uploaded what it pinned")

        let dead = try await WorkerBinary.run(["push", "--cache-dir", cache, "--remote-cache", "http://127.0.0.1:1", "--progress", "never"])
        #expect(dead.code == 1, "a push that uploads nothing fails: \(dead.code) \(dead.stdout)")
        let readOnly = try await WorkerBinary.run(["push", "--cache-dir", cache, "--remote-cache", tier.url, "--remote-cache-read-only"])
        #expect(readOnly.code == 2)
        await origin.stop()
    }

    // MARK: - Private bodies stay off the tier

    /// Bodies fetched with the manifest's headers or with URL user info are as private as their
    /// origin: never uploaded (by a sync or a push) unless --remote-cache-upload-private says the
    /// tier is as private. (f94e2a0 uploaded them.)
    @Test func bodiesFetchedWithCredentialsAreNotUploadedUnlessTheTierIsDeclaredPrivate() async throws {
        let tier = try WebDAVTier()
        defer { tier.stop() }
        let origin = try await TestOrigin.start()
        let directory = TemporaryDirectory()
        let (manifest, hashes) = fixture(origin, directory, count: 3, header: "headers:\n  Authorization: \"Bearer ${TOKEN}\"\n")
        let withUser = origin.url("/a/9.png").replacingOccurrences(of: "http://", with: "http://reader:secret@")
        origin.set("/a/9.png", Self.body(9))
        let userManifest = directory.write(
            "user.yaml", "version: 1\nentries:\n  - url: \(withUser)\n    hash: sha256:\(sha256(Self.body(9)))\n")
        let report = directory.path + "/r.json"
        let run = try await WorkerBinary.run(
            [
                "sync", manifest, userManifest, "--cache-dir", directory.path + "/c", "--remote-cache", tier.url,
                "--report", report,
            ], environment: ["TOKEN": "t0ken"])
        #expect(run.code == 0, "\(run.stderr)")
        let remote = try #require(try json(report)["remote_cache"] as? [String: Any])
        #expect(remote["uploads"] as? Int == 0 && remote["private_not_uploaded"] as? Int == 4, "\(remote)")
        #expect(tier.objects.isEmpty, "\(tier.objects)")
        #expect(run.stdout.contains("4 private (fetched with credentials) not uploaded"), "\(run.stdout)")
        // push keeps them local too.
        let push = try await WorkerBinary.run(["push", "--cache-dir", directory.path + "/c", "--remote-cache", tier.url])
        #expect(push.code == 0 && tier.objects.isEmpty, "\(push.stdout) \(push.stderr)")
        #expect(push.stdout.contains("4 private (fetched with credentials) kept local"), "\(push.stdout)")
        // Declared private, the tier takes them.
        let shared = try await WorkerBinary.run([
            "push", "--cache-dir", directory.path + "/c", "--remote-cache", tier.url,
            "--remote-cache-upload-private",
        ])
        #expect(shared.code == 0, "\(shared.stdout) \(shared.stderr)")
        #expect(tier.objects == (hashes + [sha256(Self.body(9))]).sorted())
        let synced = try await WorkerBinary.run(
            [
                "sync", manifest, "--cache-dir", directory.path + "/d", "--remote-cache", tier.url,
                "--remote-cache-upload-private", "--report", report,
            ], environment: ["TOKEN": "t0ken"])
        #expect(synced.code == 0, "\(synced.stderr)")
        await origin.stop()
    }

    /// `push` hashes each object again: a damaged one is not sent under its name.
    @Test func pushNeverUploadsADamagedObject() async throws {
        let tier = try WebDAVTier()
        defer { tier.stop() }
        let origin = try await TestOrigin.start()
        let directory = TemporaryDirectory()
        let (manifest, hashes) = fixture(origin, directory, count: 3)
        let cache = directory.path + "/c"
        #expect(try await WorkerBinary.run(["sync", manifest, "--cache-dir", cache]).code == 0)
        let damaged = cache + "/objects/sha256/" + hashes[1].prefix(2) + "/" + hashes[1]
        chmod(damaged, 0o644)
        try Data("not the avatar".utf8).write(to: URL(fileURLWithPath: damaged))
        let push = try await WorkerBinary.run(["push", "--cache-dir", cache, "--remote-cache", tier.url])
        #expect(push.code == 1, "\(push.code) \(push.stdout) \(push.stderr)")
        #expect(push.stdout.contains("1 damaged (run worker verify --repair)"), "\(push.stdout)")
        #expect(tier.objects == [hashes[0], hashes[2]].sorted(), "\(tier.objects)")
        await origin.stop()
    }

    // MARK: - A tier that misbehaves never stores anything and never fails an entry

    /// Prefixes of the fault tier (the test origin's routes), what each does to `{prefix}/cas/{hex}`,
    /// and the counter it must show.
    static let faults: [(prefix: String, counter: String)] = [
        ("/wrong", "corrupt"),  // other bytes under the name
        ("/html", "corrupt"),  // 200 with an HTML error page
        ("/truncate", "corrupt"),  // declares more than it sends
        ("/drip/300", "corrupt"),  // a byte every 300 ms: cut by --remote-timeout
        ("/redirect/1", "misses"),  // a redirect is not followed
        ("/flaky/1000/503", "errors"),  // 503 every time
        ("/reset", "errors"),  // closes without an answer
    ]

    @Test(arguments: 0..<RemoteCacheTests.faults.count)
    func aFaultyTierAnswerIsDiscardedAndTheOriginServes(_ number: Int) async throws {
        let (prefix, counter) = Self.faults[number]
        let tier = try await TestOrigin.start()
        let origin = try await TestOrigin.start()
        let directory = TemporaryDirectory()
        let (manifest, hashes) = fixture(origin, directory, count: 2)
        for (index, hash) in hashes.enumerated() {
            tier.set("/cas/\(hash)", Self.body(index))
            tier.set("/wrong/cas/\(hash)", Array("not the avatar".utf8))
            tier.set("/html/cas/\(hash)", Array("<html><body>Service Unavailable</body></html>".utf8))
        }
        let report = directory.path + "/r.json"
        let run = try await WorkerBinary.runBounded(
            [
                "sync", manifest, "--cache-dir", directory.path + "/c", "--report", report,
                "--remote-cache", tier.url(prefix), "--remote-timeout", "1",
                "--remote-cache-read-only",
            ], seconds: 60)
        #expect(run.code == 0, "\(prefix): \(run.stdout)")
        let document = try json(report)
        #expect(
            rows(document).count == 2 && rows(document).allSatisfy { $0["source"] as? String == "origin" },
            "\(prefix): \(rows(document))")
        let remote = try #require(document["remote_cache"] as? [String: Any])
        #expect(remote[counter] as? Int == 2, "\(prefix): \(remote)")
        #expect(remote["hits"] as? Int == 0)
        // The redirect's target (the right bytes) was never asked for: redirects are not followed.
        if prefix.hasPrefix("/redirect") { #expect(hashes.allSatisfy { tier.hits("/cas/\($0)") == 0 }) }
        #expect(document["unreachable_origins"] == nil, "tier errors are not the origin's")
        let verify = try await WorkerBinary.run(["verify", "--cache-dir", directory.path + "/c"])
        #expect(verify.code == 0, "\(prefix): \(verify.stdout)")
        #expect(originRequests(origin, 2) == 2)
        await tier.stop()
        await origin.stop()
    }

    /// A tier that drips each body just above the crawl floor (here 40 KiB/s of a 2 MB answer) and
    /// takes every upload at once: each lookup ends at its own deadline (ten times
    /// --remote-timeout), uploads do not clear the errors, and three in a row give the tier up.
    /// (On f94e2a0 each lookup waited for the entry timeout, ten minutes.)
    @Test func aTierThatDripsIsGivenUpAfterThreeLookups() async throws {
        let tier = try await TestOrigin.start()
        let origin = try await TestOrigin.start()
        let directory = TemporaryDirectory()
        let (manifest, hashes) = fixture(origin, directory, count: 8)
        let slow = Array(repeating: UInt8(ascii: "x"), count: 2 << 20)
        for hash in hashes { tier.set("/cas/\(hash)", slow) }
        let report = directory.path + "/r.json"
        let run = try await WorkerBinary.runBounded(
            [
                "sync", manifest, "--cache-dir", directory.path + "/c", "--report", report,
                "--remote-cache", tier.url("/trickle/4096/100"), "--remote-timeout", "0.5",
                "-j", "1",
            ], seconds: 120)
        #expect(run.code == 0, "\(run.stdout)")
        let document = try json(report)
        let remote = try #require(document["remote_cache"] as? [String: Any])
        #expect(remote["corrupt"] as? Int == 3 && remote["skipped"] as? Int == 5, "\(remote)")
        #expect((remote["uploads"] as? Int ?? 0) >= 1, "uploads succeeded in between: \(remote)")
        #expect(remote["given_up"] is String, "\(remote)")
        #expect(rows(document).count == 8 && rows(document).allSatisfy { $0["source"] as? String == "origin" })
        // Each of the three lookups ended at its deadline (5 s), not the entry's: the run's own clock.
        let seconds = try #require(document["duration_seconds"] as? Double)
        #expect(seconds < 60, "\(seconds) s")

        // A tier under the floor is cut for being too slow, and says so (not "connect timeout").
        let crawl = try await WorkerBinary.runBounded(
            [
                "sync", manifest, "--cache-dir", directory.path + "/d",
                "--remote-cache", tier.url("/drip/300"), "--remote-timeout", "0.5",
                "--remote-cache-read-only", "-j", "1",
            ], seconds: 120)
        #expect(crawl.code == 0, "\(crawl.stdout)")
        #expect(
            crawl.stdout.contains("too slow: under 16.4 KB/s for 1s") && !crawl.stdout.contains("connect timeout"),
            "\(crawl.stdout)")
        await tier.stop()
        await origin.stop()
    }

    @Test func aDeadTierIsGivenUpOnceAndTheRunGoesOnFromTheOrigin() async throws {
        let origin = try await TestOrigin.start()
        let directory = TemporaryDirectory()
        let (manifest, _) = fixture(origin, directory, count: 40)
        let report = directory.path + "/r.json"
        let run = try await WorkerBinary.run([
            "sync", manifest, "--cache-dir", directory.path + "/c", "--report", report,
            "--remote-cache", "http://127.0.0.1:1", "--jobs", "4",
        ])
        #expect(run.code == 0, "\(run.stderr)")
        let warnings = run.stderr.split(separator: "\n").filter { $0.contains("given up") }
        #expect(warnings.count == 1, "one warning line: \(run.stderr)")
        let document = try json(report)
        let remote = try #require(document["remote_cache"] as? [String: Any])
        #expect(remote["given_up"] is String && (remote["errors"] as? Int ?? 99) <= 8, "\(remote)")
        #expect((remote["skipped"] as? Int ?? 0) >= 30, "no request to a tier given up: \(remote)")
        #expect(document["unreachable_origins"] == nil)
        #expect(rows(document).count == 40 && rows(document).allSatisfy { $0["source"] as? String == "origin" })
        #expect(originRequests(origin, 40) == 40, "one request per entry: no retries from the tier's errors")
        await origin.stop()
    }

    @Test func aDeadlineReportsUploadsNotDoneInsteadOfWaitingForThem() async throws {
        let tier = try await TestOrigin.start()
        let origin = try await TestOrigin.start()
        let directory = TemporaryDirectory()
        let (manifest, _) = fixture(origin, directory, count: 3)
        let report = directory.path + "/r.json"
        // Lookups answer at once (404); uploads would be answered after 20 s.
        let run = try await WorkerBinary.runBounded(
            [
                "sync", manifest, "--cache-dir", directory.path + "/c", "--report", report,
                "--remote-cache", tier.url("/slowwrite/20000"), "--remote-timeout", "60",
                "--deadline", "2s",
            ], seconds: 60)
        #expect(run.code == 0, "every entry was stored before the deadline: \(run.stdout)")
        let took = try #require(try json(report)["duration_seconds"] as? Double)
        #expect(took < 15, "the run waited \(took) s for uploads (its own clock)")
        let remote = try #require(try json(report)["remote_cache"] as? [String: Any])
        #expect(remote["uploads_not_done"] as? Int == 3 && remote["uploads"] as? Int == 0, "\(remote)")
        await tier.stop()
        await origin.stop()
    }

    @Test func sigtermDuringTheUploadsEndsTheRunAndReportsThemNotDone() async throws {
        let tier = try await TestOrigin.start()
        let origin = try await TestOrigin.start()
        let directory = TemporaryDirectory()
        let (manifest, _) = fixture(origin, directory, count: 3)
        let report = directory.path + "/r.json"
        let process = try WorkerBinary.spawn(
            [
                "sync", manifest, "--cache-dir", directory.path + "/c", "--report", report,
                "--remote-cache", tier.url("/slowwrite/30000"), "--remote-timeout", "60",
                "--progress", "never",
            ], log: directory.path + "/run.log")
        // The three uploads have reached the tier (it answers them only after 30 s).
        let waitEnd = Date().addingTimeInterval(30)
        while tier.totalRequests < 6, Date() < waitEnd { try? await Task.sleep(nanoseconds: 10_000 * 1000) }
        #expect(tier.totalRequests == 6, "three lookups and three uploads: \(tier.totalRequests)")
        kill(process.processIdentifier, SIGTERM)
        let exitEnd = Date().addingTimeInterval(10)
        while process.isRunning, Date() < exitEnd { try? await Task.sleep(nanoseconds: 10_000 * 1000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        await process.exited()
        #expect(process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGTERM)
        let document = try json(report)
        let remote = try #require(document["remote_cache"] as? [String: Any])
        #expect(remote["uploads_not_done"] as? Int == 3 && remote["uploads"] as? Int == 0, "\(remote)")
        #expect(rows(document).filter { $0["status"] as? String == "added" }.count == 3, "the entries were kept")
        await tier.stop()
        await origin.stop()
    }

    @Test func anHTTPSTierIsTrustedThroughCACertAndAnUntrustedOneIsOnlyAnError() async throws {
        let directory = TemporaryDirectory()
        let origin = try await TestOrigin.start()
        let (manifest, hashes) = fixture(origin, directory, count: 2)
        var objects: [String: [UInt8]] = [:]
        for (index, hash) in hashes.enumerated() { objects["cas/\(hash)"] = Self.body(index) }
        let (tier, certificate) = try NginxServer.https(objects, in: directory)
        defer { tier.stop() }
        let files = (certificate: certificate, key: "")
        let trusted = try await WorkerBinary.run([
            "sync", manifest, "--cache-dir", directory.path + "/a", "--report", directory.path + "/a.json",
            "--remote-cache", tier.url(""), "--ca-cert", files.certificate,
        ])
        #expect(trusted.code == 0, "\(trusted.stderr)")
        let hits = try #require(try json(directory.path + "/a.json")["remote_cache"] as? [String: Any])
        #expect(hits["hits"] as? Int == 2 && originRequests(origin, 2) == 0, "\(hits)")
        // Without the CA the tier's certificate is not trusted: the origin serves, the run succeeds.
        let untrusted = try await WorkerBinary.run([
            "sync", manifest, "--cache-dir", directory.path + "/b", "--report", directory.path + "/b.json",
            "--remote-cache", tier.url(""),
        ])
        #expect(untrusted.code == 0, "\(untrusted.stderr)")
        let errors = try #require(try json(directory.path + "/b.json")["remote_cache"] as? [String: Any])
        #expect(errors["errors"] as? Int == 2 && errors["hits"] as? Int == 0, "\(errors)")
        #expect(originRequests(origin, 2) == 2)

        await origin.stop()
    }

    // MARK: - Credentials and bad input

    @Test func tierHeadersGoOnlyToTheTierAndManifestHeadersNeverDo() async throws {
        let tier = try await TestOrigin.start()
        let origin = try await TestOrigin.start()
        let directory = TemporaryDirectory()
        let (manifest, hashes) = fixture(origin, directory, count: 1, header: "headers:\n  X-Origin-Token: origin-secret\n")
        let report = directory.path + "/r.json"
        let tierURL = tier.url("/").replacingOccurrences(of: "http://", with: "http://user:tier-password@")
        let run = try await WorkerBinary.run(
            [
                "sync", manifest, "--cache-dir", directory.path + "/c", "--report", report,
                "--metrics", directory.path + "/m.prom", "--verbose",
                "--remote-cache", tierURL, "--remote-header", "Authorization: Bearer ${TIER_TOKEN}",
            ],
            environment: ["TIER_TOKEN": "tier-secret"])
        #expect(run.code == 0, "\(run.stderr)")
        let atTier = try #require(tier.lastHeaders("/cas/\(hashes[0])"))
        #expect(atTier["authorization"] == "Bearer tier-secret")
        #expect(atTier["x-origin-token"] == nil, "a manifest header reached the tier")
        let atOrigin = try #require(origin.lastHeaders("/a/0.png"))
        #expect(atOrigin["x-origin-token"] == "origin-secret" && atOrigin["authorization"] == nil)
        let written =
            try String(contentsOfFile: report, encoding: .utf8) + String(contentsOfFile: directory.path + "/m.prom", encoding: .utf8)
        for secret in ["tier-secret", "tier-password"] {
            #expect(!written.contains(secret) && !run.stdout.contains(secret) && !run.stderr.contains(secret), "\(secret) was shown")
        }
        #expect(run.stdout.contains(tier.url("")), "the redacted URL is shown: \(run.stdout)")

        let unset = try await WorkerBinary.run([
            "sync", manifest, "--cache-dir", directory.path + "/c2", "--remote-cache", tier.url(""),
            "--remote-header", "Authorization: Bearer ${NOT_SET_ANYWHERE}",
        ])
        #expect(unset.code == 2 && unset.stderr.contains("NOT_SET_ANYWHERE"), "\(unset.stderr)")
        await tier.stop()
        await origin.stop()
    }

    @Test(arguments: [
        ["--remote-cache", "ftp://127.0.0.1/cache"],
        ["--remote-cache", "not a url"],
        ["--remote-cache", "http://"],
        ["--remote-cache", "http://127.0.0.1:9/x?y=1"],
        ["--remote-cache-read-only"],
        ["--remote-header", "Authorization: x"],
        ["--remote-cache", "http://127.0.0.1:9", "--remote-header", "no colon"],
        ["--remote-cache", "http://127.0.0.1:9", "--remote-timeout", "0"],
        ["--remote-cache", "http://127.0.0.1:9", "--remote-uploads", "0"],
        // A password holding '/', '#' or '?' is never printed; two '@' (libcurl refuses it).
        ["--remote-cache", "http://user:se/cret@127.0.0.1:9"],
        ["--remote-cache", "http://user:se#cret@127.0.0.1:9"],
        ["--remote-cache", "http://user:se?cret@127.0.0.1:9"],
        ["--remote-cache", "http://u:p@cret@127.0.0.1:9"],
        ["--remote-cache-upload-private"],
    ])
    func badTierOptionsAreUsageErrorsBeforeAnyRequest(_ options: [String]) async throws {
        let origin = try await TestOrigin.start()
        let directory = TemporaryDirectory()
        let (manifest, _) = fixture(origin, directory, count: 1)
        let run = try await WorkerBinary.run(["sync", manifest, "--cache-dir", directory.path + "/c"] + options)
        #expect(run.code == 2, "\(options): \(run.code) \(run.stderr)")
        #expect(!(run.stdout + run.stderr).contains("cret"), "\(options): a password printed: \(run.stderr)")
        #expect(origin.totalRequests == 0, "\(options): a request was made")
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/c"))
        await origin.stop()
    }
}
