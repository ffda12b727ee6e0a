import CurlTransport
import Foundation
import Testing
import WorkerTestSupport

@testable import WorkerFetch
@testable import WorkerManifest
@testable import WorkerStore
@testable import WorkerSync

/// `SyncEngine.sync` against a real HTTP origin on 127.0.0.1 that counts requests.
@Suite(.hangLimit) struct SyncTests {
    @Test func coldSyncFetchesAllAndWarmSyncFetchesNone() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let names = (0..<20).map { "file\($0).png" }
        let manifest = harness.manifest(names.map { ("/f/" + $0, harness.serve($0)) })

        let cold = try await harness.sync(manifest)
        #expect(harness.origin.totalRequests == 20)
        #expect(cold.totals.added == 20 && cold.totals.failed == 0 && cold.totals.entries == 20)
        #expect(cold.totals.bytesDownloaded == Int64(names.reduce(0) { $0 + harness.serve($1).count }))
        for name in names {
            #expect(try harness.cachedBytes("/f/" + name) == harness.serve(name))
        }
        #expect(harness.objects().count == 20)
        #expect(harness.temporaryFiles().isEmpty)

        let warm = try await harness.sync(manifest)
        #expect(harness.origin.totalRequests == 20, "a warm sync makes no request")
        #expect(warm.totals.unchanged == 20 && warm.totals.added == 0)
        #expect(warm.entries.isEmpty)
    }

    /// A new cache's first sync of many entries builds its index of rows by object once the rows
    /// are in; a small one has it from the start. Either way the run ends with it.
    @Test func aNewCachesFirstLargeSyncEndsWithItsObjectIndex() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let count = SyncEngine.objectIndexDeferredFrom
        let manifest = harness.manifest((0..<count).map { ("/f/\($0)", harness.serve("\($0)")) })
        let cold = try await harness.sync(manifest)
        #expect(cold.totals.added == count && cold.totals.failed == 0)
        let index = try CacheIndex(path: harness.cache + "/index.sqlite", create: false, readOnly: true)
        #expect(try CacheIndex.hasIndex(index.database, "entries_object"))
        #expect(try index.references(object: harness.objects()[0]) == 1)
    }

    @Test func readAheadIsUsedOnlyWhileNoOtherWriterCommitted() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let names = (0..<3).map { "r\($0)" }
        let manifest = harness.manifest(names.map { ("/f/" + $0, harness.serve($0)) })
        _ = try await harness.sync(manifest)
        var options = SyncOptions(cacheDirectory: harness.cache)
        options.fetch.transport = CurlTransport()
        let engine = SyncEngine(options: options)

        // Nothing changed since the read-ahead: it is current, and the warm sync needs no request.
        let quiet = engine.prefetch(manifestPaths: [manifest])
        let current = await quiet.value
        #expect(current?.rows.count == 3)
        #expect(current?.isCurrent == true)
        let warm = try await engine.syncLoaded(try ManifestLoader().load(paths: [manifest]), prefetched: quiet).report
        #expect(warm.totals.unchanged == 3 && harness.origin.totalRequests == 3)

        // Another writer removes a row after the read-ahead and before the run takes the lock
        // (its file stays, as when `worker rm` leaves an object another URL uses): the rows read
        // ahead are stale, so the run reads again and fetches the entry. With the stale rows it
        // would count the entry unchanged and leave it out of the index.
        let ahead = engine.prefetch(manifestPaths: [manifest])
        let stale = await ahead.value
        #expect(stale?.rows.count == 3)
        let removed = try #require(try harness.records().first)
        try CacheIndex(path: harness.cache + "/index.sqlite", create: false)
            .apply(upserts: [], touches: [], removals: [removed.url], at: Date().timeIntervalSince1970)
        #expect(stale?.isCurrent == false)
        let report = try await engine.syncLoaded(try ManifestLoader().load(paths: [manifest]), prefetched: ahead).report
        #expect(report.totals.added == 1 && report.totals.unchanged == 2 && report.totals.failed == 0)
        #expect(harness.origin.totalRequests == 4)
        #expect(try harness.records().count == 3)
    }

    @Test func changingThreeHashesFetchesExactlyThree() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let names = (0..<10).map { "f\($0)" }
        var entries = names.map { ("/f/" + $0, harness.serve($0)) }
        _ = try await harness.sync(harness.manifest(entries))
        let before = harness.origin.totalRequests
        let oldHashes = entries.prefix(3).map { "sha256:" + sha256($0.1) }

        for index in 0..<3 {
            entries[index].1 = harness.serve(names[index], "version 2 of \(names[index])\n")
        }
        let report = try await harness.sync(harness.manifest(entries))
        #expect(harness.origin.totalRequests - before == 3)
        #expect(report.totals.updated == 3 && report.totals.unchanged == 7)
        #expect(report.entries.map(\.status) == [.updated, .updated, .updated])
        #expect(report.entries.map(\.previousHash) == oldHashes)
        for index in 0..<3 {
            #expect(try harness.cachedBytes("/f/" + names[index]) == entries[index].1)
        }
    }

    @Test func wrongBytesFailWithHashMismatchAndKeepTheOldVersion() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let old = harness.serve("a", "old bytes\n")
        _ = try await harness.sync(harness.manifest([("/f/a", old), ("/f/b", harness.serve("b"))]))

        // The manifest now expects new bytes, but the origin serves something else.
        harness.serve("a", "not what the manifest says\n")
        harness.serve("c")
        let report = try await harness.sync(
            harness.manifest([
                ("/f/a", Array("new bytes\n".utf8)), ("/f/b", harness.serve("b")), ("/f/c", harness.serve("c")),
            ]))
        let failed = try #require(report.failedEntries.first)
        #expect(report.totals.failed == 1 && report.totals.added == 1 && report.totals.unchanged == 1)
        #expect(failed.reason == .hashMismatch)
        #expect(failed.error == "expected sha256:\(sha256("new bytes\n")) got sha256:\(sha256("not what the manifest says\n"))")
        #expect(failed.stale == true)
        #expect(failed.attempts == 1, "a hash mismatch is not retried")
        #expect(try harness.cachedBytes("/f/a") == old, "the earlier version stays in place")
        #expect(!harness.objects().contains(sha256("not what the manifest says\n")), "bad bytes are never stored")
        #expect(harness.temporaryFiles().isEmpty)
    }

    @Test func notFoundFailsWithHTTPStatusAndIsNotRetried() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let report = try await harness.sync(
            harness.manifest([
                ("/status/404", Array("x".utf8)), ("/f/ok", harness.serve("ok")),
            ]))
        let failed = try #require(report.failedEntries.first)
        #expect(failed.reason == .httpStatus)
        #expect(failed.httpStatus == 404)
        #expect(failed.attempts == 1)
        #expect(failed.stale == false)
        #expect(harness.origin.hits("/status/404") == 1)
        #expect(report.totals.added == 1)
        #expect(try harness.records().map(\.url) == [harness.origin.url("/f/ok")])
    }

    @Test func serverErrorsAreRetriedThenReported() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let report = try await harness.sync(harness.manifest([("/status/503", nil)])) { $0.fetch.retry.retries = 2 }
        let failed = try #require(report.failedEntries.first)
        #expect(failed.reason == .httpStatus && failed.httpStatus == 503)
        #expect(failed.attempts == 3)
        #expect(harness.origin.hits("/status/503") == 3)
    }

    @Test func failedURLIsTriedAgainOnTheNextRun() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let bytes = Array("arrives late\n".utf8)
        let manifest = harness.manifest([("/f/late", bytes)])
        let first = try await harness.sync(manifest)
        #expect(first.totals.failed == 1)
        harness.origin.set("/f/late", bytes)
        let second = try await harness.sync(manifest)
        #expect(second.totals.added == 1 && second.totals.failed == 0)
    }

    @Test func twoURLsWithOneHashDownloadOnce() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let bytes = harness.serve("one")
        harness.origin.set("/f/two", bytes)
        harness.origin.set("/f/three", bytes)
        let report = try await harness.sync(harness.manifest([("/f/one", bytes), ("/f/two", bytes)]))
        #expect(harness.origin.totalRequests == 1)
        #expect(report.entries.map(\.status) == [.added, .reused])
        #expect(harness.objects() == [sha256(bytes)])

        // Already stored: a third URL with that hash is linked without any request.
        let later = try await harness.sync(harness.manifest([("/f/one", bytes), ("/f/two", bytes), ("/f/three", bytes)]))
        #expect(harness.origin.totalRequests == 1)
        #expect(later.entries.map(\.status) == [.reused])
        #expect(try harness.records().count == 3)
    }

    @Test func sameHashFromABrokenURLFallsBackToAnotherURL() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let bytes = harness.serve("good")
        let report = try await harness.sync(harness.manifest([("/f/missing", bytes), ("/f/good", bytes)]))
        #expect(report.entries.map(\.status) == [.failed, .added])
        #expect(report.failedEntries.first?.httpStatus == 404)
    }

    @Test func hashlessEntryIsFetchedOnceWhileMissing() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        harness.serve("free")
        let manifest = harness.manifest([("/f/free", nil)])
        let first = try await harness.sync(manifest)
        #expect(first.totals.added == 1 && first.entries.first?.hash == nil)
        let second = try await harness.sync(manifest)
        #expect(second.totals.unchanged == 1)
        #expect(harness.origin.totalRequests == 1)
    }

    @Test func redirectsAreFollowedUpToFive() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let report = try await harness.sync(
            harness.manifest([
                ("/redirect/5/f/five", harness.serve("five")), ("/redirect/6/f/six", harness.serve("six")),
            ]))
        #expect(report.entries.map(\.status) == [.added, .failed])
        #expect(report.failedEntries.first?.reason == .redirect)
        #expect(report.failedEntries.first?.error == "more than 5 redirects")
        #expect(harness.origin.hits("/f/six") == 0)
    }

    @Test func syncRemovesWhatACrashedRunLeftInTmp() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let manifest = harness.manifest([("/f/a", harness.serve("a"))])
        _ = try await harness.sync(manifest)
        harness.directory.write("cache/tmp/dl-99999-1", "half a body")
        harness.directory.write("cache/tmp/dl-99999-2", "another")
        let warm = try await harness.sync(manifest)
        #expect(warm.totals.unchanged == 1)
        #expect(harness.temporaryFiles().isEmpty, "cleaned under the lock at start")
    }

    @Test func objectDeletedBehindOurBackIsFetchedAgain() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let bytes = harness.serve("a")
        let manifest = harness.manifest([("/f/a", bytes)])
        _ = try await harness.sync(manifest)
        unlink(harness.objectPath(sha256(bytes)))
        let report = try await harness.sync(manifest)
        #expect(report.entries.map(\.status) == [.added])
        #expect(harness.origin.totalRequests == 2)
    }

    @Test func pruneRemovesOrphansAndTheirObjects() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let keep = (0..<3).map { ("/f/k\($0)", harness.serve("k\($0)")) }
        let drop = ("/f/d", harness.serve("d"))
        _ = try await harness.sync(harness.manifest(keep + [drop]))
        #expect(harness.objects().count == 4)

        let withoutPrune = try await harness.sync(harness.manifest(keep))
        #expect(withoutPrune.orphans == 1 && withoutPrune.totals.removed == 0)
        #expect(try harness.records().count == 4)

        let pruned = try await harness.sync(harness.manifest(keep)) { $0.prune = true }
        #expect(pruned.totals.removed == 1)
        #expect(pruned.entries.map(\.status) == [.removed])
        #expect(try harness.records().count == 3)
        #expect(!harness.objects().contains(sha256(drop.1)))
    }

    @Test func pruneRefusesToRemoveMostOfTheCache() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let all = (0..<4).map { ("/f/p\($0)", harness.serve("p\($0)")) }
        _ = try await harness.sync(harness.manifest(all))
        // A truncated manifest: 3 of 4 entries would go.
        let refused = try await harness.sync(harness.manifest(Array(all.prefix(1)))) { $0.prune = true }
        #expect(refused.pruneRefused != nil)
        #expect(refused.totals.removed == 0)
        #expect(try harness.records().count == 4)

        let forced = try await harness.sync(harness.manifest(Array(all.prefix(1)))) {
            $0.prune = true; $0.force = true
        }
        #expect(forced.totals.removed == 3)
        #expect(try harness.records().count == 1)
    }

    @Test func sharedObjectSurvivesPruningOfOneOfItsURLs() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let bytes = harness.serve("shared")
        harness.origin.set("/f/alias", bytes)
        let others = (0..<3).map { ("/f/o\($0)", harness.serve("o\($0)")) }
        _ = try await harness.sync(harness.manifest([("/f/shared", bytes), ("/f/alias", bytes)] + others))
        let report = try await harness.sync(harness.manifest([("/f/shared", bytes)] + others)) { $0.prune = true }
        #expect(report.totals.removed == 1)
        #expect(harness.objects().contains(sha256(bytes)))
    }

    @Test func manifestHeadersAreSent() async throws {
        // The origin answers 404 to everything but the files it serves; a header that is not
        // sent shows up as no difference, so check it reaches a server that records it.
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let bytes = harness.serve("h")
        let manifest = harness.manifest([("/f/h", bytes)], extra: "headers:\n  X-Token: \"${WORKER_IT_TOKEN}\"\n")
        let report = try await harness.sync(manifest, environment: ["WORKER_IT_TOKEN": "abc"])
        #expect(report.totals.added == 1)
        #expect(harness.origin.lastHeaders("/f/h")?["x-token"] == "abc")
    }

    @Test func deadlineCancelsWhatIsLeft() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        // 503s with retries keep the only job busy past the deadline.
        let entries: [(path: String, bytes: [UInt8]?)] =
            [("/status/503", nil)] + (0..<5).map { ("/f/late\($0)", harness.serve("late\($0)")) }
        let report = try await harness.sync(harness.manifest(entries)) { options in
            options.fetch.jobs = 1
            options.fetch.retry = RetryPolicy(retries: 50, baseDelay: 0.05, maxDelay: 0.05)
            options.deadline = 0.3
        }
        #expect(report.totals.failed == 6)
        #expect(report.failedEntries.filter { $0.reason == .cancelled }.count >= 5)
    }
}
