import Foundation
import Logging

/// The mutable state of one sync: downloads in a sliding window, results committed in batches
/// (flush the new objects once, then one index transaction), report entries in manifest order.
struct SyncRun {
    let plan: SyncPlan
    let store: ContentStore
    let index: CacheIndex
    let options: SyncOptions
    let logger: Logger

    private(set) var report: SyncReport
    /// The manifest of every failed entry, for the per-manifest run record.
    private(set) var failedManifestIndexes: [Int] = []
    /// Report rows with their plan item, kept as `options.listLimit` allows (failed ones always).
    private var rows: [(item: Int, entry: SyncReport.Entry)] = []
    private var listed = 0
    /// What finished since the last commit.
    private var batch = BatchCommit()
    /// URLs confirmed current by a 304: their "last used" is refreshed at the end.
    private var pendingTouches: [String] = []
    /// Objects the run's rows stopped naming (a URL's previous version). `finish()` deletes the
    /// ones no row names, after the outputs were written (the HTML report shows them as
    /// "before"), so no object is left that the index does not know.
    private var replaced: Set<String> = []
    private var lastCommit = Date()
    private var progress = SyncProgress(total: 0, done: 0, failed: 0, bytes: 0, started: Date())

    init(plan: SyncPlan, store: ContentStore, index: CacheIndex, options: SyncOptions, logger: Logger) {
        self.plan = plan
        self.store = store
        self.index = index
        self.options = options
        self.logger = logger
        report = SyncReport(startedAt: Date(), finishedAt: Date(), cacheDirectory: options.cacheDirectory, manifests: [])
    }

    /// A set of plan items that want the same content: the first URL that delivers it is
    /// downloaded, the others reuse it. Hashless entries are groups of one.
    private struct DownloadGroup: Sendable {
        let items: [Int]
        let requests: [FetchRequest]
    }

    mutating func execute() async throws(CacheError) {
        let now = Date().timeIntervalSince1970
        var touches: [String] = []
        var groups: [DownloadGroup] = []
        var groupByKey: [String: Int] = [:]
        var members: [[Int]] = []
        for (offset, item) in plan.items.enumerated() {
            switch item.action {
            case .keep:
                report.totals.count(.unchanged)
                if options.reportAll, hasRoom {
                    keep(offset, entry(item, status: .unchanged, object: item.previous?.object, size: item.previous?.size))
                }
                // Like relatime: refresh "last used" at most hourly, so warm runs write nothing.
                if let previous = item.previous, previous.lastUsed < now - 3600 { touches.append(item.entry.url) }
            case .reuse(let object, let size):
                link(offset, object: object, size: size, status: .reused, body: nil, attempts: nil)
            case .download, .revalidate, .refresh:
                // One download per content, except that --refresh fetches every URL again.
                let key = options.refresh ? "url:" + item.entry.url
                    : item.entry.hash.map { $0.description } ?? "url:" + item.entry.url
                if let existing = groupByKey[key] {
                    members[existing].append(offset)
                } else {
                    groupByKey[key] = members.count
                    members.append([offset])
                }
            }
        }
        for items in members {
            groups.append(DownloadGroup(items: items, requests: items.map { request(for: $0) }))
        }

        progress.total = groups.reduce(0) { $0 + $1.items.count }
        progress.started = Date()
        // A first snapshot, so progress can be shown before the first download ends.
        if progress.total > 0, !options.offline { options.onProgress?(progress) }
        if options.offline {
            for group in groups { failOffline(group) }
        } else if !groups.isEmpty {
            try await download(groups)
        }
        try commit(touches: touches + pendingTouches, at: now)
        try prune()
        report.totals.entries = plan.items.count
        report.entries = rows.sorted { $0.item < $1.item }.map(\.entry) + report.entries
        report.orphans = plan.orphans.count
    }

    // MARK: - Downloads

    private mutating func download(_ groups: [DownloadGroup]) async throws(CacheError) {
        let fetcher = Fetcher(store: store, settings: options.fetch, logger: logger)
        // Origins an earlier run gave up on are probed with one request before the rest.
        let remembered = try index.unhealthyOrigins()
        let breaker = OriginBreaker(down: Set(remembered.map(\.origin)))
        let queue = DownloadQueue(fetcher: fetcher, groups: groups.map(\.requests), jobs: options.fetch.jobs,
                                  breaker: breaker)
        var failure: CacheError?
        let deadlineTimer = options.deadline.map { seconds in
            fetcher.eventLoop.scheduleTask(in: .nanoseconds(Int64(max(0, seconds) * 1e9))) { [logger] in
                logger.info("deadline reached; cancelling downloads in flight")
                queue.stop(because: "the run's deadline (--deadline \(Units.formatDuration(seconds))) passed")
            }
        }
        queue.start()
        while let finished = await queue.next() {
            for group in finished {
                record(groups[group.group], group.results)
            }
            if failure == nil, batch.upserts.count >= options.batchSize || batch.bytes >= options.batchBytes
                || Date().timeIntervalSince(lastCommit) >= options.batchInterval {
                do throws(CacheError) { try commit(touches: [], at: Date().timeIntervalSince1970) } catch {
                    failure = error
                    queue.stop()
                }
            }
        }
        deadlineTimer?.cancel()
        await fetcher.shutdown()
        let deadlineText = options.deadline.map { Units.formatDuration($0) } ?? ""
        for number in queue.unstarted {
            for item in groups[number].items {
                fail(item, FetchFailure(.cancelled, "the run's deadline (--deadline \(deadlineText)) passed before this entry started"),
                     attempts: 0)
            }
        }
        if let failure { throw failure }
        try recordOrigins(queue.originSummaries, remembered: remembered)
    }

    /// Puts the origins given up in the report and the index; forgets those that answered.
    private mutating func recordOrigins(_ summaries: [OriginBreaker.Summary],
                                        remembered: [UnhealthyOrigin]) throws(CacheError) {
        let now = Date().timeIntervalSince1970
        let since = Dictionary(remembered.map { ($0.origin, $0.since) }, uniquingKeysWith: { first, _ in first })
        var failedByOrigin: [String: Int] = [:]
        for row in rows where row.entry.status == .failed {
            failedByOrigin[Fetcher.origin(of: plan.items[row.item].entry.url), default: 0] += 1
        }
        var down: [(origin: String, problem: String)] = []
        for summary in summaries {
            guard let problem = summary.openedFor else { continue }
            down.append((summary.origin, problem))
            report.unreachableOrigins.append(SyncReport.OriginProblem(
                origin: summary.origin, problem: problem, since: Timestamp.iso(since[summary.origin] ?? now),
                failed: failedByOrigin[summary.origin] ?? 0, notTried: summary.notTried))
            logger.info("origin unreachable", metadata: ["origin": "\(summary.origin)", "origin.problem": "\(problem)"])
        }
        let reached = summaries.filter { $0.answered && $0.openedFor == nil }.map(\.origin)
        try index.recordOrigins(down: down, reached: reached, at: now)
    }

    private func request(for item: Int) -> FetchRequest {
        let planned = plan.items[item]
        let manifest = plan.manifests.manifests[planned.entry.manifest]
        let revalidate = planned.action == .revalidate
        return FetchRequest(url: planned.entry.url, expected: planned.entry.hash, headers: manifest.headers,
                            localRoot: manifest.baseURL == nil ? manifest.localRoot : nil,
                            etag: revalidate ? planned.previous?.etag : nil,
                            lastModified: revalidate ? planned.previous?.lastModified : nil)
    }

    /// `--offline`: what would need the network fails as `cancelled`; earlier versions stay.
    private mutating func failOffline(_ group: DownloadGroup) {
        for item in group.items {
            let planned = plan.items[item]
            if planned.action == .revalidate { continue }
            let message = planned.isUpdate ? "offline: the cached version is out of date" : "offline: not in the cache"
            fail(item, FetchFailure(.cancelled, message), attempts: 0)
        }
    }

    private mutating func record(_ group: DownloadGroup, _ results: [FetchResult]) {
        defer {
            progress.done += group.items.count
            progress.failed = report.totals.failed
            progress.bytes = report.totals.bytesDownloaded
            options.onProgress?(progress)
        }
        var delivered: FetchedBody?
        for (position, result) in results.enumerated() {
            let item = group.items[position]
            let planned = plan.items[item]
            report.totals.bytesDownloaded += result.bytesReceived
            switch result.result {
            case .success(.notModified):
                // 304: the stored version is current; only "last used" changes.
                report.totals.count(.unchanged)
                pendingTouches.append(planned.entry.url)
                if options.reportAll, hasRoom {
                    keep(item, entry(planned, status: .unchanged, object: planned.previous?.object,
                                     size: planned.previous?.size, attempts: result.attempts))
                }
            case .success(.body(let body)):
                delivered = body
                batch.addBytes(body.size)
                let status: EntryStatus
                if planned.action == .refresh { report.totals.refreshed += 1 }
                if planned.action == .revalidate || planned.action == .refresh {
                    status = body.sha256 == planned.previous?.object ? .unchanged : .updated
                } else {
                    status = planned.isUpdate ? .updated : .added
                }
                link(item, object: body.sha256, size: body.size, status: status, body: body, attempts: result.attempts)
            case .failure(let failure):
                fail(item, failure, attempts: result.attempts)
            }
        }
        guard let delivered else { return }
        for item in group.items.dropFirst(results.count) {
            link(item, object: delivered.sha256, size: delivered.size, status: .reused, body: nil, attempts: nil)
        }
    }

    /// Records a verified object as the URL's current version (an index row once committed).
    private mutating func link(_ item: Int, object: String, size: Int64, status: EntryStatus,
                               body: FetchedBody?, attempts: Int?) {
        let planned = plan.items[item]
        let now = Date().timeIntervalSince1970
        if let previous = planned.previous?.object, previous != object { replaced.insert(previous) }
        batch.add(IndexRecord(url: planned.entry.url, hash: planned.entry.hash?.description, object: object,
                              size: size, fetchedAt: now, lastUsed: now, etag: body?.etag, lastModified: body?.lastModified),
                  installing: body?.temporaryPath)
        if status != .unchanged || options.reportAll, hasRoom {
            keep(item, entry(planned, status: status, object: object, size: size, attempts: attempts))
        }
        report.totals.count(status)
    }

    /// Whether the report list has room for another row that is not a failure. Callers build a
    /// row only then: without a report file, a cold sync of a million entries builds none.
    private var hasRoom: Bool { listed < options.listLimit ?? .max }

    private mutating func keep(_ item: Int, _ row: SyncReport.Entry) {
        if row.status != .failed {
            guard hasRoom else { return }
            listed += 1
        }
        rows.append((item, row))
    }

    private mutating func fail(_ item: Int, _ failure: FetchFailure, attempts: Int) {
        let planned = plan.items[item]
        report.totals.count(.failed)
        failedManifestIndexes.append(planned.entry.manifest)
        var row = entry(planned, status: .failed, object: nil, size: nil, attempts: attempts)
        row.reason = failure.reason
        row.error = failure.message
        row.httpStatus = failure.httpStatus
        row.actualHash = failure.actualHash?.description
        row.stale = planned.previous.map { store.contains($0.object) } ?? false
        keep(item, row)
        if failure.reason != .cancelled || attempts > 0 {
            batch.add(failure: FailureRecord(url: planned.entry.url, reason: failure.reason.rawValue, error: failure.message,
                                             attempts: attempts, at: Date().timeIntervalSince1970))
        }
        logger.debug("entry failed", metadata: ["entry.url": "\(Redact.url(planned.entry.url))",
                                                "entry.reason": "\(failure.reason.rawValue)"])
    }

    private func entry(_ planned: PlannedEntry, status: EntryStatus, object: String?, size: Int64?,
                       attempts: Int? = nil) -> SyncReport.Entry {
        SyncReport.Entry(
            url: Redact.url(planned.entry.url),
            hash: planned.entry.hash?.description,
            status: status,
            previousHash: status == .updated ? planned.previous.map { $0.hash ?? "sha256:" + $0.object } : nil,
            bytes: size,
            attempts: attempts,
            path: object.map(store.objectPath),
            manifest: plan.manifests.manifests[planned.entry.manifest].name,
            previousPath: status == .updated || status == .failed ? planned.previous.map { store.objectPath($0.object) } : nil
        )
    }

    // MARK: - Commit and prune

    /// Commits what finished since the last commit (see `BatchCommit`).
    private mutating func commit(touches: [String], at time: Double) throws(CacheError) {
        try batch.commit(store: store, index: index, touches: touches, at: time)
        lastCommit = Date()
    }

    /// Deletes the previous versions no row names any more, then clears the mark a crash would
    /// have left. The last step of a run, under its lock.
    mutating func finish() throws(CacheError) {
        for object in replaced where try index.references(object: object) == 0 {
            store.remove(object)
        }
        replaced.removeAll()
        if batch.markedUnclean { store.markClean() }
    }

    private mutating func prune() throws(CacheError) {
        let cutoff = Date().timeIntervalSince1970 - options.pruneAfter
        // The grace period: an orphan goes only once no synced manifest has named it for that long.
        let orphans = plan.orphans.filter { $0.lastUsed <= cutoff }
        report.pruneWaiting = plan.orphans.count - orphans.count
        guard options.prune, !orphans.isEmpty else { return }
        let share = Double(orphans.count) / Double(max(1, plan.indexedEntries))
        if share > options.pruneMax, !options.force {
            report.pruneRefused = "refusing to prune \(orphans.count) of \(plan.indexedEntries) entries "
                + "(\(Int((share * 100).rounded())) % > --prune-max \(Int((options.pruneMax * 100).rounded())) %); "
                + "check the manifests, or pass --force"
            return
        }
        // Rows go before files: an index row never points at a missing object. A stop in between
        // leaves objects no row names: the mark makes the next run sweep them.
        try batch.markUnclean(store)
        try index.apply(upserts: [], touches: [], removals: orphans.map(\.url), at: Date().timeIntervalSince1970)
        _ = try CacheMaintenance.deleteUnreferenced(orphans, index: index, store: store)
        for orphan in orphans {
            report.totals.count(.removed)
            guard listed < options.listLimit ?? .max else { continue }
            listed += 1
            report.entries.append(SyncReport.Entry(url: Redact.url(orphan.url), hash: orphan.hash, status: .removed,
                                                   bytes: orphan.size))
        }
    }
}
