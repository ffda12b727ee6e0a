import Crypto
import Foundation
import Testing
import WorkerLifecycle
import WorkerStore
import WorkerTestSupport

/// status, path, rm, clear, gc, export, --prune-after, --revalidate and --offline through the
/// built binary.
@Suite(.hangLimit) struct LifecycleTests {
    func json(_ text: String) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test func statusCountsEntriesObjectsDeduplicationRunsAndFailures() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let shared = harness.serve("shared", String(repeating: "s", count: 1000))
        harness.origin.set("/f/alias", shared)
        let other = harness.serve("other", String(repeating: "o", count: 500))
        let manifest = harness.manifest([("/f/shared", shared), ("/f/alias", shared), ("/f/other", other), ("/status/404", nil)])
        let run20 = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--retries", "0"])
        #expect(run20.code == 1, "the 404 entry fails: \(run20.code) \(run20.stderr)")
        let result = try await WorkerBinary.run(["status", "--cache-dir", harness.cache, "--json"])
        #expect(result.code == 0)
        let status = try json(result.stdout)
        #expect(status["entries"] as? Int == 3)
        #expect(status["objects"] as? Int == 2)
        #expect(status["bytes"] as? Int == 1500)
        #expect(status["bytes_saved_by_deduplication"] as? Int == 1000)
        #expect(status["failed_pending"] as? Int == 1)
        let manifests = try #require(status["manifests"] as? [[String: Any]])
        #expect(manifests.first?["result"] as? String == "1 failed")
        #expect(manifests.first?["entries"] as? Int == 4)
        #expect((status["failures"] as? [[String: Any]])?.first?["reason"] as? String == "http_status")
        let text = try await WorkerBinary.run(["status", "--cache-dir", harness.cache])
        #expect(text.code == 0, "\(text.stderr)")
        #expect(text.stdout.contains("entries    3"))
        #expect(text.stdout.contains("failed     1 entry pending"))

        // The failure clears once the URL syncs.
        harness.origin.set("/status/404", "now it exists")
        let run39 = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache])
        #expect(run39.code == 0, "everything syncs: \(run39.code) \(run39.stderr)")
        #expect(try await json(WorkerBinary.run(["status", "--cache-dir", harness.cache, "--json"]).stdout)["failed_pending"] as? Int == 0)
    }

    @Test func pathPrintsTheObjectAndRecordsTheUse() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let bytes = harness.serve("p")
        _ = try await harness.sync(harness.manifest([("/f/p", bytes)]))
        try CacheIndex(path: harness.cache + "/index.sqlite", create: false).setLastUsed(1000, urls: [harness.origin.url("/f/p")])
        let result = try await WorkerBinary.run(["path", harness.origin.url("/f/p"), "--cache-dir", harness.cache])
        #expect(result.code == 0)
        #expect(result.stdout == harness.objectPath(sha256(bytes)) + "\n")
        #expect(try harness.records().first!.lastUsed > Date().timeIntervalSince1970 - 60, "reading counts as a use")
        let missing = try await WorkerBinary.run(["path", harness.origin.url("/f/nope"), "--cache-dir", harness.cache])
        #expect(missing.code == 1)
        #expect(missing.stdout.isEmpty)
    }

    /// A warm sync refreshes "last used" of the kept entries whose stamp is over an hour old (as
    /// relatime does), and leaves the others: a warm run within the hour writes nothing.
    @Test func aWarmSyncRefreshesLastUsedAtMostHourly() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let files = (0..<3).map { ("/f/t\($0)", harness.serve("t\($0)")) }
        let manifest = harness.manifest(files)
        _ = try await harness.sync(manifest)
        let index = try CacheIndex(path: harness.cache + "/index.sqlite", create: false)
        let recent = Date().timeIntervalSince1970 - 600
        try index.setLastUsed(1000, urls: [harness.origin.url("/f/t0"), harness.origin.url("/f/t2")])
        try index.setLastUsed(recent, urls: [harness.origin.url("/f/t1")])
        let warm = try await harness.sync(manifest)
        #expect(warm.totals.unchanged == 3)
        let used = Dictionary(uniqueKeysWithValues: try harness.records().map { ($0.url, $0.lastUsed) })
        let now = Date().timeIntervalSince1970
        #expect(used[harness.origin.url("/f/t0")]! > now - 60 && used[harness.origin.url("/f/t2")]! > now - 60)
        #expect(used[harness.origin.url("/f/t1")] == recent, "a stamp within the hour stays")
    }

    /// Due rows side by side in the index's key order are refreshed as ranges: a row of another
    /// manifest between them, and a row whose stamp is recent, keep theirs.
    @Test func stampsRefreshedAsRangesLeaveTheRowsBetweenAlone() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let files = (0..<60).map { (path: String(format: "/f/r%02d", $0), bytes: harness.serve(String(format: "r%02d", $0))) }
        let mine = harness.manifest(files)
        // Another manifest's row sorts between r29 and r30.
        let other = harness.manifest([("/f/r29b", harness.serve("r29b"))], name: "other.yaml")
        _ = try await harness.sync(mine)
        _ = try await harness.sync(other)
        let index = try CacheIndex(path: harness.cache + "/index.sqlite", create: false)
        try index.setLastUsed(1000, urls: (files.map(\.path) + ["/f/r29b"]).map { harness.origin.url($0) })
        let recent = Date().timeIntervalSince1970 - 600
        try index.setLastUsed(recent, urls: [harness.origin.url("/f/r05")])
        let warm = try await harness.sync(mine)
        #expect(warm.totals.unchanged == 60)
        let used = Dictionary(uniqueKeysWithValues: try harness.records().map { ($0.url, $0.lastUsed) })
        let now = Date().timeIntervalSince1970
        let stale = files.map(\.path).filter { (path: String) in path != "/f/r05" && used[harness.origin.url(path)]! < now - 60 }
        #expect(stale.isEmpty, "every due row of the manifest is refreshed")
        #expect(used[harness.origin.url("/f/r05")] == recent, "a stamp within the hour stays")
        #expect(used[harness.origin.url("/f/r29b")] == 1000, "another manifest's row between two ranges stays")
    }

    @Test func rmRemovesEntriesAndObjectsNothingElseUses() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let shared = harness.serve("shared")
        harness.origin.set("/f/alias", shared)
        let alone = harness.serve("alone")
        _ = try await harness.sync(harness.manifest([("/f/shared", shared), ("/f/alias", shared), ("/f/alone", alone)]))
        let result = try await WorkerBinary.run([
            "rm", harness.origin.url("/f/alias"), harness.origin.url("/f/alone"), "--cache-dir", harness.cache,
        ])
        #expect(result.code == 0)
        #expect(result.stdout.contains("removed 2 entries, 1 objects"))
        #expect(harness.objects() == [sha256(shared)], "the shared object stays: /f/shared still uses it")
        #expect(try harness.records().map(\.url) == [harness.origin.url("/f/shared")])
        let unknown = try await WorkerBinary.run(["rm", harness.origin.url("/f/never"), "--cache-dir", harness.cache])
        #expect(unknown.code == 1)
        #expect(unknown.stderr.contains("not cached: \(harness.origin.url("/f/never"))"))
    }

    @Test func clearRemovesEverythingAndTheCacheStaysUsable() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let manifest = harness.manifest((0..<5).map { ("/f/c\($0)", harness.serve("c\($0)")) })
        _ = try await harness.sync(manifest)
        let result = try await WorkerBinary.run(["clear", "--cache-dir", harness.cache])
        #expect(result.code == 0)
        #expect(result.stdout == "cleared 5 entries and 5 objects\n")
        #expect(harness.objects().isEmpty)
        #expect(try harness.records().isEmpty)
        let again = try await harness.sync(manifest)
        #expect(again.totals.added == 5)
    }

    @Test func gcEvictsByAgeThenLeastRecentlyUsedBySize() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        // Five 1000-byte objects; last used 30, 4, 3, 2 and 1 days ago.
        let entries = (0..<5).map { ("/f/g\($0)", harness.serve("g\($0)", String(repeating: "\($0)", count: 1000))) }
        _ = try await harness.sync(harness.manifest(entries))
        let index = try CacheIndex(path: harness.cache + "/index.sqlite", create: false)
        let now = Date().timeIntervalSince1970
        for (offset, days) in [30.0, 4, 3, 2, 1].enumerated() {
            try index.setLastUsed(now - days * 86400, urls: [harness.origin.url(entries[offset].0)])
        }
        let dry = try await WorkerBinary.run(["gc", "--cache-dir", harness.cache, "--dry-run", "--json", "--max-size", "2500"])
        let planned = try json(dry.stdout)
        #expect(planned["removed_by_age"] as? [String] == [harness.origin.url("/f/g0")])
        #expect(planned["removed_by_size"] as? [String] == [harness.origin.url("/f/g1"), harness.origin.url("/f/g2")])
        #expect(harness.objects().count == 5, "--dry-run changes nothing")

        // Age alone (default 7 days).
        #expect(try await WorkerBinary.run(["gc", "--cache-dir", harness.cache]).code == 0)
        #expect(try harness.records().map(\.url) == (1..<5).map { harness.origin.url("/f/g\($0)") })
        // Size: 4000 bytes over a 2500 limit go down to 80 % (2000): the two least recently used go.
        let sized = try await json(WorkerBinary.run(["gc", "--cache-dir", harness.cache, "--max-size", "2500", "--json"]).stdout)
        #expect(sized["bytes_after"] as? Int == 2000)
        #expect(try harness.records().map(\.url) == [harness.origin.url("/f/g3"), harness.origin.url("/f/g4")])
        #expect(Set(harness.objects()) == Set([sha256(entries[3].1), sha256(entries[4].1)]))
    }

    @Test func pruneWaitsForTheGracePeriod() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let keep = (0..<4).map { ("/f/k\($0)", harness.serve("k\($0)")) }
        let recent = ("/f/recent", harness.serve("recent"))
        let old = ("/f/old", harness.serve("old"))
        _ = try await harness.sync(harness.manifest(keep + [recent, old]))
        try CacheIndex(path: harness.cache + "/index.sqlite", create: false)
            .setLastUsed(Date().timeIntervalSince1970 - 10 * 86400, urls: [harness.origin.url(old.0)])
        let result = try await WorkerBinary.run([
            "sync", harness.manifest(keep), "--cache-dir", harness.cache, "--prune", "--prune-after", "3d",
        ])
        #expect(result.code == 0)
        #expect(result.stdout.contains("removed 1"))
        #expect(result.stdout.contains("1 unnamed entry waits for the --prune-after grace period"))
        #expect(try harness.records().map(\.url).contains(harness.origin.url(recent.0)))
        #expect(try !harness.records().map(\.url).contains(harness.origin.url(old.0)))
    }

    @Test(arguments: TreeLayout.allCases.filter { $0 != .tree })
    func exportWritesEachLayoutsNamesAsHardLinks(layout: TreeLayout) async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let png = harness.serve("a.png")
        let plain = harness.serve("noext")
        let query = harness.serve("q.jpg")
        // The origin ignores the query: /f/q.jpg?size=2 serves /f/q.jpg.
        _ = try await harness.sync(harness.manifest([("/f/a.png", png), ("/f/noext", plain), ("/f/q.jpg?size=2", nil)]))
        #expect(try harness.cachedBytes("/f/q.jpg?size=2") == query)
        let out = harness.directory.path + "/export-\(layout.rawValue)"
        let result = try await WorkerBinary.run(["export", "--layout", layout.rawValue, out, "--cache-dir", harness.cache])
        #expect(result.code == 0, "\(result.stderr)")
        // The names, computed here independently of the exporter.
        func md5(_ text: String) -> String { Insecure.MD5.hash(data: Array(text.utf8)).map { String(format: "%02x", $0) }.joined() }
        let urls = ["/f/a.png", "/f/noext", "/f/q.jpg?size=2"].map(harness.origin.url)
        var expected: [String: String] = [:]
        for url in urls {
            let ext = url.hasSuffix(".png") ? "png" : url.contains(".jpg") ? "jpg" : ""
            let object = try #require(try harness.records().first { $0.url == url }?.object)
            switch layout {
            case .sdwebimage: expected[url] = md5(url) + (ext.isEmpty ? "" : "." + ext)
            case .kingfisher: expected[url] = sha256(url)
            case .hash: expected[url] = object + (ext.isEmpty ? "" : "." + ext)
            case .tree: Issue.record("the tree layout is ExportTests'")
            }
        }
        // And the list of what the export wrote there.
        let written = try FileManager.default.contentsOfDirectory(atPath: out).sorted()
        #expect(written == (expected.values + [".worker-export"]).sorted())
        for record in try harness.records() {
            var exported = stat()
            var object = stat()
            #expect(stat(out + "/" + expected[record.url]!, &exported) == 0)
            #expect(stat(harness.objectPath(record.object), &object) == 0)
            #expect(exported.st_ino == object.st_ino, "a hard link to the object")
        }
        // Only one manifest's entries.
        let only = harness.manifest([("/f/a.png", png)], name: "only.yaml")
        let subset = harness.directory.path + "/subset-\(layout.rawValue)"
        #expect(try await WorkerBinary.run(["export", "--layout", layout.rawValue, subset, only, "--cache-dir", harness.cache]).code == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: subset).sorted() == [".worker-export", expected[urls[0]]!])
    }

    @Test func revalidateUses304ForUnchangedAndFetchesChangedBodies() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        harness.serve("live", "version 1\n")
        let manifest = harness.manifest([("/f/live", nil)])
        _ = try await harness.sync(manifest)
        let sentBefore = harness.origin.bodyBytesSent

        let same = try await harness.sync(manifest) { $0.revalidate = true }
        #expect(harness.origin.lastHeaders("/f/live")?["if-none-match"] != nil, "a conditional request")
        #expect(same.totals.unchanged == 1)
        #expect(same.totals.bytesDownloaded == 0)
        #expect(harness.origin.bodyBytesSent == sentBefore, "the 304 path transfers no body")

        harness.serve("live", "version 2\n")
        let changed = try await harness.sync(manifest) { $0.revalidate = true }
        #expect(changed.totals.updated == 1)
        #expect(changed.entries.first?.previousHash == "sha256:" + sha256("version 1\n"))
        #expect(try harness.cachedBytes("/f/live") == Array("version 2\n".utf8))

        // Without --revalidate a cached hashless entry is not requested at all.
        let requests = harness.origin.totalRequests
        _ = try await harness.sync(manifest)
        #expect(harness.origin.totalRequests == requests)
    }

    @Test func offlineReportsWhatIsMissingOrOutOfDateWithoutNetwork() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let a = harness.serve("a")
        let b = harness.serve("b")
        _ = try await harness.sync(harness.manifest([("/f/a", a)]))
        let requests = harness.origin.totalRequests
        let manifest = harness.manifest([("/f/a", Array("a changed".utf8)), ("/f/b", b)])
        let report = harness.directory.path + "/offline.json"
        let result = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--offline", "--report", report])
        #expect(result.code == 1)
        #expect(harness.origin.totalRequests == requests, "no network")
        let entries = try #require(try json(String(contentsOfFile: report, encoding: .utf8))["entries"] as? [[String: Any]])
        let byURL = Dictionary(uniqueKeysWithValues: entries.map { ($0["url"] as! String, $0) })
        #expect(byURL[harness.origin.url("/f/a")]?["error"] as? String == "offline: the cached version is out of date")
        #expect(byURL[harness.origin.url("/f/a")]?["stale"] as? Bool == true)
        #expect(byURL[harness.origin.url("/f/b")]?["error"] as? String == "offline: not in the cache")
        let complete = try await WorkerBinary.run(["sync", harness.manifest([("/f/a", a)]), "--cache-dir", harness.cache, "--offline"])
        #expect(complete.code == 0)
    }
}
