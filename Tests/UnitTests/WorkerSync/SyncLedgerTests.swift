import FoundationEssentials
import Testing
import WorkerTestSupport

@testable import WorkerFetch
@testable import WorkerManifest
@testable import WorkerPlan
@testable import WorkerReport
@testable import WorkerStore
@testable import WorkerSync

/// The run's one account: statuses derived from the planned action, the retention rule, the
/// report's header from what the ledger was built with, outcomes when asked, the dry run's rows.
@Suite(.hangLimit) struct SyncLedgerTests {
    let objectA = String(repeating: "a", count: 64)
    let objectB = String(repeating: "b", count: 64)
    let started = Date(timeIntervalSince1970: 1_700_000_000)

    func entry(_ url: String, _ hash: String?) -> ManifestEntry {
        ManifestEntry(url: url, hash: hash.flatMap { try? ContentHash.parse($0).get() }, manifest: 0, line: 1, column: 1)
    }

    func record(_ url: String, hash: String?, object: String) -> IndexRecord {
        IndexRecord(url: url, hash: hash, object: object, size: 10, fetchedAt: 0, lastUsed: 0)
    }

    func plan(
        _ entries: [ManifestEntry], _ records: [IndexRecord] = [], present: Set<String> = [],
        configure: (inout Planner) -> Void = { _ in }
    ) -> SyncPlan {
        let manifest = Manifest(path: "/m/site.yaml", name: "site", baseURL: nil, headers: [], localRoot: "/", entryCount: entries.count)
        var planner = Planner(objectExists: { present.contains($0) })
        configure(&planner)
        return planner.plan(ManifestSet(manifests: [manifest], entries: entries), records: IndexRows(records))
    }

    func ledger(_ plan: SyncPlan, listLimit: Int? = nil, reportAll: Bool = true, outcomes: Bool = false) -> SyncLedger {
        SyncLedger(
            plan: plan, cacheDirectory: "/cache", startedAt: started, outputs: outputs(reportAll: reportAll),
            shownRows: listLimit, limits: nil, keepsOutcomes: outcomes)
    }

    /// With `reportAll`, a JSON report of every row (never written here); else no output file.
    func outputs(reportAll: Bool = true) -> SyncOutputs {
        SyncOutputs(reportAll ? [SyncOutputs.File(JSONReportWriter(all: true), "/r.json")] : [])
    }

    @Test func aFetchedRowSaysWhereItsBytesCameFromAndTheTiersCountsReachTheReport() throws {
        let downloads = plan([
            entry("http://h/a", "sha256:" + objectA), entry("http://h/b", "sha256:" + objectB),
            entry("http://h/c", "sha256:" + objectA),
        ])
        var account = ledger(downloads)
        account.record(.delivered(item: 0, object: objectA, size: 3, attempts: 1, source: .remote))
        account.record(.delivered(item: 1, object: objectB, size: 3, attempts: 1, source: .origin))
        account.record(.reused(item: 2, object: objectA, size: 3))
        var tier = SyncReport.RemoteCache(url: "http://tier", readOnly: false)
        tier.hits = 1
        tier.misses = 1
        account.record(.remoteCache(tier))
        let report = account.report(finishedAt: started, budget: FailureBudget.none)
        #expect(report.entries.map(\.source) == [.remote, .origin, nil], "a reused row fetched nothing")
        #expect(report.remoteCache == tier)
        let json = String(decoding: try JSONReportWriter.data(report), as: UTF8.self)
        #expect(json.contains("\"source\" : \"remote\"") && json.contains("\"remote_cache\" : {"), "\(json)")
        #expect(!json.contains("\"present\""), "push's count is not in a sync report")
    }

    /// A full disk: the ledger hears of a batch's rows once the commit decided them, so rows the
    /// index had no room for are counted failed, once, and never as delivered or reused first.
    @Test func aRowTheIndexHadNoRoomForIsToldAsFailedOnly() {
        let downloads = plan(
            [
                entry("http://h/a", "sha256:" + objectA), entry("http://h/b", "sha256:" + objectB),
                entry("http://h/c", "sha256:" + objectA),
            ],
            [record("http://h/b", hash: "sha256:" + objectA, object: objectA)], present: [objectA])
        let rows = [
            UncommittedRow(item: 0, object: objectA, size: 3, attempts: 1, source: .origin, servedBy: nil, origin: nil),
            UncommittedRow(item: 1, object: objectB, size: 3, attempts: 3, source: .origin, servedBy: nil, origin: nil),
            UncommittedRow(reusing: objectA, size: 3, item: 2),
        ]
        let told = rows.map { $0.event(stored: $0.item == 0, stale: $0.item == 1) }
        var account = ledger(downloads)
        for event in told { account.record(event) }
        let report = account.report(finishedAt: started, budget: FailureBudget.none)
        #expect(
            report.totals.added == 1 && report.totals.updated == 0 && report.totals.reused == 0 && report.totals.failed == 2,
            "\(report.totals)")
        #expect(report.entries.map(\.status) == [.added, .failed, .failed])
        #expect(
            report.entries[1].stale == true && report.entries[1].error == "no space left on the device (the index had no room for its row)")
        #expect(report.entries[1].attempts == 3, "the attempts that delivered it")
        #expect(report.entries[2].stale == false && report.entries[2].reason == .io)
        // A commit that stored every row tells each row's own event.
        let stored = rows.map { $0.event(stored: true, stale: false) }
        var whole = ledger(downloads)
        for event in stored { whole.record(event) }
        let totals = whole.report(finishedAt: started, budget: FailureBudget.none).totals
        #expect(totals.added == 1 && totals.updated == 1 && totals.reused == 1 && totals.failed == 0, "\(totals)")
    }

    @Test func aDeliveredBodyTakesItsStatusFromThePlannedAction() {
        // New → added; a changed hash → updated.
        let downloads = plan(
            [entry("http://h/a", "sha256:" + objectA), entry("http://h/b", "sha256:" + objectB)],
            [record("http://h/b", hash: "sha256:" + objectA, object: objectA)], present: [objectA])
        var first = ledger(downloads)
        first.record(.delivered(item: 0, object: objectA, size: 3, attempts: 1))
        first.record(.delivered(item: 1, object: objectB, size: 3, attempts: 2))
        let report = first.report(finishedAt: started, budget: FailureBudget.none)
        #expect(report.entries.map(\.status) == [.added, .updated])
        #expect(report.entries[1].previousHash == "sha256:" + objectA)
        #expect(report.totals.added == 1 && report.totals.updated == 1)

        // Revalidated or refreshed: the same bytes are unchanged, a refresh is counted.
        let hashless = [entry("http://h/c", nil)]
        let stored = [record("http://h/c", hash: nil, object: objectA)]
        var revalidated = ledger(plan(hashless, stored, present: [objectA]) { $0.revalidate = true })
        revalidated.record(.delivered(item: 0, object: objectA, size: 10, attempts: 1))
        #expect(revalidated.report(finishedAt: started, budget: FailureBudget.none).entries.map(\.status) == [.unchanged])
        var refreshed = ledger(plan(hashless, stored, present: [objectA]) { $0.refresh = true })
        refreshed.record(.delivered(item: 0, object: objectB, size: 10, attempts: 1))
        let refresh = refreshed.report(finishedAt: started, budget: FailureBudget.none)
        #expect(refresh.entries.map(\.status) == [.updated])
        #expect(refresh.totals.refreshed == 1)

        // A changed file on disk fetched again: updated, repaired, and said so on the row.
        let pinned = [entry("http://h/a", "sha256:" + objectA)]
        var repaired = ledger(
            plan(
                pinned, [record("http://h/a", hash: "sha256:" + objectA, object: objectA)],
                present: [objectA]
            ) { $0.objectSize = { _ in 99 } })
        repaired.record(.delivered(item: 0, object: objectA, size: 10, attempts: 1))
        let repair = repaired.report(finishedAt: started, budget: FailureBudget.none)
        #expect(repair.entries.map(\.status) == [.updated])
        #expect(repair.totals.repaired == 1)
        #expect(repair.entries.first?.refetched != nil)
    }

    @Test func theOutputsDecideWhichRowsAreKept() {
        // Three unchanged entries, three added, one failed; the caller shows one row.
        let urls = (0..<7).map { entry("http://h/\($0)", nil) }
        let records = (0..<3).map { record("http://h/\($0)", hash: nil, object: objectA) }
        func kept(_ configure: (inout SyncOutputs) -> Void, shown: Int? = 1) -> [EntryStatus] {
            var outputs = SyncOutputs()
            configure(&outputs)
            var account = SyncLedger(
                plan: plan(urls, records, present: [objectA]), cacheDirectory: "/cache", startedAt: started,
                outputs: outputs, shownRows: shown, limits: nil)
            for item in 0..<3 { account.record(.unchanged(item: item, attempts: nil)) }
            for item in 3..<6 { account.record(.delivered(item: item, object: objectB, size: 1, attempts: 1)) }
            account.record(.failed(item: 6, FetchFailure(.connection, "connection refused"), attempts: 1, stale: false, origin: nil))
            return account.report(finishedAt: started, budget: FailureBudget.none).entries.map(\.status)
        }
        #expect(kept { _ in } == [.added, .failed], "no file: failures and what the caller shows")
        #expect(kept({ _ in }, shown: 0) == [.failed], "a caller that reads outcomes keeps failures only")
        #expect(
            kept { $0.files = [.init(JSONReportWriter(), "/r.json")] } == [.added, .added, .added, .failed],
            "the JSON report lists every change")
        #expect(
            kept { $0.files = [.init(JSONReportWriter(all: true), "/r.json")] }
                == [.unchanged, .unchanged, .unchanged, .added, .added, .added, .failed])
        #expect(kept { $0.files = [.init(JUnitReportWriter(), "/j.xml")] }.count == 7, "JUnit has a case per entry checked")
        #expect(kept { $0.files = [.init(HTMLReportWriter(), "/r.html")] } == [.added, .added, .added, .failed])
        #expect(kept { $0.files = [.init(PrometheusMetricsWriter(), "/m.prom")] } == [.added, .failed], "metrics list no rows")
        #expect(kept { $0.files = [.init(MarkdownSummaryWriter(), "/s.md", appends: true)] } == [.added, .added, .added, .failed])
    }

    @Test func rowsFollowTheRetentionRuleInManifestOrder() {
        let urls = (0..<4).map { entry("http://h/\($0)", nil) }
        var account = ledger(plan(urls), listLimit: 1, reportAll: false)
        // Events in another order than the manifest's.
        account.record(.failed(item: 3, FetchFailure(.httpStatus, "HTTP 404", httpStatus: 404), attempts: 1, stale: false, origin: nil))
        account.record(.delivered(item: 2, object: objectB, size: 1, attempts: 1))
        account.record(.delivered(item: 1, object: objectA, size: 1, attempts: 1))
        account.record(.failed(item: 0, FetchFailure(.connection, "connection refused"), attempts: 4, stale: false, origin: nil))
        let report = account.report(finishedAt: started, budget: FailureBudget.none)
        // Failures always; one other row while the list has room (the first to come).
        #expect(report.entries.map(\.url) == ["http://h/0", "http://h/2", "http://h/3"])
        #expect(report.entries.map(\.status) == [.failed, .added, .failed])
        #expect(report.totals.added == 2 && report.totals.failed == 2 && report.totals.entries == 4)
        #expect(report.entries[2].httpStatus == 404 && report.entries[2].reason == .httpStatus)

        var quiet = ledger(plan(urls), reportAll: false)
        quiet.record(.unchanged(item: 0, attempts: nil))
        #expect(quiet.report(finishedAt: started, budget: FailureBudget.none).entries.isEmpty, "unchanged rows only with reportAll")
    }

    @Test func theHeaderComesFromWhatTheLedgerWasBuiltWithAndTheBudgetDecides() {
        let limits = SyncReport.Limits(limitRate: 1000, maxRequestsPerSecond: nil)
        var account = SyncLedger(
            plan: plan([entry("http://h/a", nil)]), cacheDirectory: "/cache", startedAt: started,
            outputs: outputs(), shownRows: nil, limits: limits)
        account.record(.failed(item: 0, FetchFailure(.timeout, "read timeout"), attempts: 1, stale: true, origin: nil))
        account.record(.received(1234))
        account.record(
            .originGivenUp(
                SyncReport.OriginProblem(
                    origin: "http://h", problem: "connection refused",
                    since: "2026-11-25T00:00:00Z", failed: 1, notTried: 0)))
        let finished = started.addingTimeInterval(2)
        let strict = account.report(finishedAt: finished, budget: FailureBudget.none)
        #expect(strict.cacheDirectory == "/cache" && strict.startedAt == started && strict.finishedAt == finished)
        #expect(strict.manifests == [SyncReport.ManifestSummary(path: "/m/site.yaml", name: "site", entries: 1)])
        #expect(strict.limits == limits)
        #expect(strict.totals.bytesDownloaded == 1234)
        #expect(strict.unreachableOrigins.map(\.origin) == ["http://h"])
        #expect(strict.entries.first?.stale == true)
        #expect(!strict.succeeded, "one failure, none allowed")
        #expect(account.report(finishedAt: finished, budget: FailureBudget(count: 1, share: nil)).succeeded)
    }

    @Test func outcomesAreKeptOnlyWhenAskedForWithTheirRowsWhateverTheReportLists() {
        let entries = [entry("http://h/a", nil), entry("http://h/b", nil)]
        // The report lists no row but failures: the outcomes still have each item's.
        var kept = ledger(plan(entries), listLimit: 0, reportAll: false, outcomes: true)
        kept.record(.delivered(item: 0, object: objectA, size: 1, attempts: 1))
        kept.record(.failed(item: 1, FetchFailure(.io, "disk full"), attempts: 1, stale: false, origin: nil))
        let added = kept.outcome(of: 0)
        #expect(added?.status == .added && added?.sha256 == objectA)
        #expect(added?.row.url == "http://h/a" && added?.row.status == .added && added?.row.bytes == 1)
        let failed = kept.outcome(of: 1)
        #expect(failed?.status == .failed && failed?.sha256 == nil)
        #expect(failed?.row.url == "http://h/b" && failed?.row.error == "disk full" && failed?.row.reason == .io)
        #expect(kept.report(finishedAt: started, budget: nil).entries.map(\.url) == ["http://h/b"])
        var plain = ledger(plan(entries))
        plain.record(.delivered(item: 0, object: objectA, size: 1, attempts: 1))
        #expect(plain.outcome(of: 0) == nil)
    }

    @Test func failuresAreCountedPerManifestAndPerOrigin() {
        let entries = [
            entry("http://h/a", nil), entry("http://h/b", nil), entry("https://other:8443/c", nil),
            entry("file:///srv/d", nil),
        ]
        var account = ledger(plan(entries))
        // Each counted by the origin its request went to (its route's), a local file by none.
        account.record(
            .failed(
                item: 0, FetchFailure(.connection, "refused"), attempts: 1, stale: false,
                origin: Origin.of("http://h/a")))
        // Delivered, then no room for its row: a failure of its origin.
        account.record(.failed(item: 1, FetchFailure(.io, "no space"), attempts: 1, stale: false, origin: Origin.of("HTTP://h:80/b")))
        account.record(
            .failed(
                item: 2, FetchFailure(.httpStatus, "HTTP 500"), attempts: 1, stale: false,
                origin: Origin.of("https://other:8443/c")))
        account.record(.failed(item: 3, FetchFailure(.io, "missing"), attempts: 1, stale: false, origin: nil))
        #expect(account.failuresPerManifest == [4])
        #expect(account.failures(of: Origin.of("http://h/")) == 2)
        #expect(account.failures(of: Origin.of("https://other:8443/")) == 1)
        #expect(account.failures(of: Origin.of("http://elsewhere/")) == 0)
    }

    @Test func aDryRunListsPlannedStatusesAndOrphansWithoutBytes() {
        let orphan = record("http://h/gone", hash: nil, object: objectB)
        let planned = plan([entry("http://h/a", "sha256:" + objectA)], [orphan], present: [objectB])
        var dry = SyncLedger(
            plan: planned, cacheDirectory: "/cache", startedAt: started, outputs: outputs(),
            shownRows: nil, limits: nil, dryRun: true)
        dry.record(.planned(item: 0))
        dry.record(.pruned(orphan, position: 0, done: false))
        let report = dry.report(finishedAt: started, budget: nil)
        #expect(report.dryRun && report.succeeded)
        #expect(report.entries.map(\.status) == [.added, .removed])
        #expect(report.entries.map(\.bytes) == [nil, nil])
        #expect(report.orphans == 1)

        var pruning = ledger(planned)
        pruning.record(.pruned(orphan, position: 0, done: true))
        #expect(
            pruning.report(finishedAt: started, budget: FailureBudget.none).entries.first?.bytes == 10,
            "a prune that ran says what it freed")
    }

    /// Due stamps of rows side by side in key order become ranges of at most a slice of rows; a
    /// row not due (or of no item) splits them, and a run shorter than `run` is refreshed one by
    /// one. Every due row is in exactly one range or alone; no range reaches past its run.
    @Test func dueStampsBecomeRangesCoveringExactlyTheDueRows() {
        let urls = (0..<100).map { String(format: "http://h/%03d", $0) }
        var builder = IndexRows.Builder(checksDuplicates: false, inKeyOrder: true)
        for url in urls { builder.append(record(url, hash: "sha256:" + objectA, object: objectA)) }
        let manifest = Manifest(path: "/m/site.yaml", name: "site", baseURL: nil, headers: [], localRoot: "/", entryCount: urls.count)
        // Rows 40-42 belong to no entry; the manifest lists the rest in reverse order.
        let listed = urls.indices.filter { !(40...42).contains($0) }.reversed()
        let entries = listed.map { entry(urls[$0], "sha256:" + objectA) }
        let plan = Planner(objectExists: { _ in true }).plan(ManifestSet(manifests: [manifest], entries: entries), records: builder.rows)
        // Due: every item but the one of row 10 (recent) and those of rows 60-89 but 70.
        let rowOfItem = entries.map { (entry: ManifestEntry) in urls.firstIndex(of: entry.url)! }
        let due = entries.indices.filter { (item: Int) in
            rowOfItem[item] != 10 && !(60...89).contains(rowOfItem[item]) || rowOfItem[item] == 70
        }
        let (ranges, alone) = SyncRun.touchRanges(due.map { Int32($0) }, plan: plan, run: 5, slice: 7)
        let rangeRows = ranges.map { (range: (first: String, last: String)) in
            urls.firstIndex(of: range.first)!...urls.firstIndex(of: range.last)!
        }
        #expect(rangeRows.allSatisfy { $0.count <= 7 }, "\(rangeRows)")
        let covered = rangeRows.flatMap { Array($0) } + alone.map { rowOfItem[Int($0)] }
        #expect(covered.sorted() == due.map { rowOfItem[$0] }.sorted(), "each due row once, nothing else")
        #expect(alone.map { rowOfItem[Int($0)] }.sorted() == [70], "a run of one is refreshed alone")
        #expect(rangeRows.first == 0...6 && rangeRows.contains(11...17) && rangeRows.contains(90...96))
        #expect(
            SyncRun.touchRanges(
                due.map { Int32($0) },
                plan: Planner(objectExists: { _ in true })
                    .plan(
                        ManifestSet(manifests: [manifest], entries: entries),
                        records: IndexRows(urls.map { record($0, hash: nil, object: objectA) }))
            )
            .ranges.isEmpty, "rows not in key order: no ranges")
    }

    @Test func aSmallRunCommitsAQuarterOfItsDownloadsAtATime() {
        #expect(SyncRun.batchSize(downloads: 300, largest: 1024) == 75)
        #expect(SyncRun.batchSize(downloads: 100, largest: 1024) == 64, "at least 64")
        #expect(SyncRun.batchSize(downloads: 10_000, largest: 1024) == 1024, "a large run's batches as before")
        #expect(SyncRun.batchSize(downloads: 300, largest: 8) == 8, "never more than the largest")
    }
}
