import FoundationEssentials
import Glibc
import Logging
import WorkerFetch
import WorkerManifest
import WorkerPlan
import WorkerReport
import WorkerStore
import WorkerSupport

/// One sync after planning: the plan's download groups go through the queue, each result goes
/// to the batch commit (objects and index rows) and to the run's ledger (totals and rows), in
/// that one direction. Downloads and pruning are in `SyncRun+Downloads` and `SyncRun+Prune`.
struct SyncRun {
    let plan: SyncPlan
    let store: ContentStore
    let index: CacheIndex
    var options: SyncOptions
    let context: RunContext
    var logger: Logger { context.logger }

    /// The run's account: every outcome goes there, and the report comes from it.
    var ledger: SyncLedger
    /// What finished since the last commit.
    var batch: BatchCommit
    /// What the ledger is told of each of the batch's rows (delivered, reused) once the commit
    /// has stored it: a row the index had no room for is told as failed instead. The ledger hears
    /// each outcome once, after the store decided it, and never takes one back.
    var uncommitted: [UncommittedRow] = []
    /// URLs confirmed current by a 304: their "last used" is refreshed at the end.
    var pendingTouches: [String] = []
    /// Kept entries' "last used" is refreshed this many to a commit.
    static let touchSlice = 50_000
    /// Due rows side by side in the index's key order are refreshed as one range from this many.
    static let touchRun = 16
    /// Objects the run's rows stopped naming (a URL's previous version). `finish()` deletes the
    /// ones no row names, after the outputs were written (the HTML report shows them as
    /// "before"), so no object is left that the index does not know.
    var replaced: Set<String> = []
    var lastCommit = Date()
    /// The fetch engines closing their connections after the downloads (see `download`).
    var stopping: Task<Void, Never>?
    /// The shared tier of a run that downloaded with `--remote-cache`: its counts go in the report.
    var remoteTier: RemoteTier?
    /// Where objects the tier missed go once installed (nil: no tier, or read-only); it observes
    /// the batch commits.
    var tierUploads: RemoteUploads? {
        didSet { batch.observer = tierUploads }
    }
    /// A download found the disk full: no new download starts, and those cut short by it fail
    /// as "no space left on the device" (what they would have met), not as cancelled.
    var diskFull = false
    var progress = SyncProgress(total: 0, done: 0, failed: 0, bytes: 0, started: Date())

    init(
        plan: SyncPlan, store: ContentStore, index: CacheIndex, options: SyncOptions, context: RunContext,
        ledger: SyncLedger
    ) {
        self.plan = plan
        self.store = store
        self.index = index
        self.options = options
        self.context = context
        self.ledger = ledger
        batch = BatchCommit(store: store)
    }

    /// Runs the plan, telling the ledger every outcome: kept, fetched, failed, pruned, origins.
    mutating func execute() async throws(SyncFailure) {
        let now = Date().timeIntervalSince1970
        /// Kept items whose "last used" is due, by number (a run after a quiet hour has a million).
        var touched: [Int32] = []
        // By action first: an item (its entry's strings) is made only where one is needed.
        for offset in plan.items.indices {
            switch plan.action(at: offset) {
            case .keep:
                ledger.record(.unchanged(item: offset, attempts: nil))
                // Like relatime: refresh "last used" at most hourly, so warm runs write nothing.
                if let previous = plan.previous(at: offset), previous.lastUsed < now - 3600 {
                    touched.append(Int32(offset))
                }
            case .reuse(let object, let size):
                link(
                    UncommittedRow(reusing: object, size: size, item: offset), body: nil,
                    isPrivate: plan.carriesCredentials(offset, locator: options.fetch.locator))
            case .repair:
                let url = plan.manifests.entries.url(at: offset)
                logger.warning("\(Redact.url(url)): the cached file's size is not the index's (changed on disk); fetching it again")
            case .download, .revalidate, .refresh:
                break
            }
        }
        // The kinds are asked first (a registry's token), so that each group's route is where
        // its requests go.
        let locators = options.offline ? LiveLocator(fixed: options.fetch.locator) : await liveLocator()
        defer { locators.stop() }
        options.fetch.locator = locators.current
        var groups = plan.downloadGroups(refresh: options.refresh, locator: locators.current)
        if options.fetch.remoteCache != nil {
            // Machines that start together on one tier each walk the entries in an order of their
            // own: one's misses are then rarely where another is about to upload.
            var order = SystemRandomNumberGenerator()
            groups.shuffle(using: &order)
        }
        progress.total = groups.reduce(0) { $0 + $1.items.count }
        progress.started = Date()
        // A first snapshot, so progress can be shown before the first download ends.
        if progress.total > 0, !options.offline { options.onProgress?(progress) }
        var fetcher: Fetcher?
        if !options.offline, !groups.isEmpty {
            do throws(EngineStartFailure) {
                fetcher = try Fetcher(store: store, settings: options.fetch, logger: logger, network: network)
            } catch {
                throw .engines(error)
            }
        }
        do throws(CacheError) {
            if options.offline {
                for group in groups { failOffline(group) }
            } else if let fetcher {
                try await download(groups, with: fetcher, locators: locators)
            }
            let (ranges, alone) = Self.touchRanges(touched, plan: plan)
            for range in ranges {
                try await commit(touchRanges: [range], at: now)
                if touched.count > Self.touchSlice { try index.releaseMemory() }
            }
            // The others in slices: their URLs are made a slice at a time, not held all at once.
            for start in stride(from: 0, to: alone.count, by: Self.touchSlice) {
                let slice = alone[start..<min(start + Self.touchSlice, alone.count)]
                try await commit(touches: slice.map { plan.manifests.entries.url(at: Int($0)) }, at: now)
                if alone.count > Self.touchSlice { try index.releaseMemory() }
            }
            try await commit(touches: pendingTouches, at: now)
            try await buildDeferredObjectIndex()
            tierUploads?.closeOffers()
            try await prune()
        } catch {
            tierUploads?.closeOffers()
            await stopping?.value
            recordRemoteCache()
            throw .cache(error)
        }
        await stopping?.value
        recordRemoteCache()
    }

    /// The tier's counts, once its uploads have ended.
    private mutating func recordRemoteCache() {
        if let tier = remoteTier { ledger.record(.remoteCache(tier.summary)) }
    }

    // MARK: - Results

    /// A group's results: the first delivered body is linked to the items not tried.
    mutating func record(
        _ group: DownloadGroup, _ results: [ItemResult],
        progress live: (@Sendable () -> SyncProgress)? = nil
    ) {
        defer {
            progress.done += group.items.count
            progress.failed = ledger.totals.failed
            if let live {
                let now = live()
                (progress.bytes, progress.bytesTotal) = (now.bytes, now.bytesTotal)
            } else {
                progress.bytes = ledger.totals.bytesDownloaded
            }
            options.onProgress?(progress)
        }
        var delivered: (body: FetchedBody, isPrivate: Bool)?
        for tried in results {
            let (item, result) = (tried.item, tried.result)
            ledger.record(.received(result.bytesReceived))
            switch result.result {
            case .success(.notModified):
                // 304: the stored version is current; only "last used" changes.
                pendingTouches.append(plan.manifests.entries.url(at: item))
                ledger.record(.unchanged(item: item, attempts: result.attempts))
            case .success(.body(let body)):
                delivered = (body, result.isPrivate)
                logger.debug(
                    "entry fetched",
                    metadata: [
                        "entry.url": "\(Redact.url(plan.manifests.entries.url(at: item)))",
                        "entry.source": "\(result.source?.rawValue ?? "-")",
                        "entry.bytes": "\(body.size)",
                    ])
                batch.addBytes(body.size)
                if let failover = result.failover, let servedBy = result.servedBy {
                    ledger.record(.failedOver(failover, servedBy: servedBy))
                }
                link(
                    UncommittedRow(
                        item: item, object: body.sha256, size: body.size, attempts: result.attempts,
                        source: result.source, servedBy: result.servedBy, origin: tried.origin),
                    body: body, isPrivate: result.isPrivate)
            case .failure(let failure) where diskFull && failure.reason == .cancelled:
                fail(
                    item, FetchFailure(.io, "no space left on the device: cut short when the disk filled", detail: .noSpace),
                    attempts: result.attempts, origin: tried.origin)
            case .failure(let failure):
                fail(item, failure, attempts: result.attempts, origin: tried.origin)
            }
        }
        // A group of one (most are) has no other item to link.
        guard let delivered, group.items.count > 1 else { return }
        let tried = Set(results.map(\.item))
        for item in group.items where !tried.contains(item) {
            link(
                UncommittedRow(reusing: delivered.body.sha256, size: delivered.body.size, item: item), body: nil,
                isPrivate: delivered.isPrivate)
        }
    }

    /// Records a verified object as the URL's current version (an index row once committed),
    /// private when it was fetched with credentials; the ledger is told of `row` once it is.
    private mutating func link(_ row: UncommittedRow, body: FetchedBody?, isPrivate: Bool) {
        let (item, object, size) = (row.item, row.object, row.size)
        let planned = plan.item(at: item)
        let now = Date().timeIntervalSince1970
        if let previous = planned.previous?.object, previous != object { replaced.insert(previous) }
        batch.add(
            IndexRecord(
                url: planned.entry.url, hash: planned.entry.hash?.description, object: object,
                size: size, fetchedAt: now, lastUsed: now, etag: body?.etag, lastModified: body?.lastModified,
                isPrivate: isPrivate),
            item: item, installing: body?.temporaryPath)
        uncommitted.append(row)
    }

    /// `origin`: the one the item's request was for (its group's, when it was never made).
    mutating func fail(_ item: Int, _ failure: FetchFailure, attempts: Int, origin: Origin?) {
        let planned = plan.item(at: item)
        ledger.record(
            .failed(
                item: item, failure, attempts: attempts,
                stale: planned.previous.map { store.contains($0.object) } ?? false, origin: origin))
        if failure.reason != .cancelled || attempts > 0 {
            batch.add(
                failure: FailureRecord(
                    url: planned.entry.url, reason: failure.reason.rawValue, error: failure.message,
                    attempts: attempts, at: Date().timeIntervalSince1970,
                    getOnly: !options.recordsManifestRuns))
        }
        logger.debug(
            "entry failed",
            metadata: [
                "entry.url": "\(Redact.url(planned.entry.url))",
                "entry.reason": "\(failure.reason.rawValue)",
            ])
    }

    // MARK: - Commit and finish

    /// The due items' rows where they lie side by side in the index's key order (runs of `run`
    /// or more, no other row between them when read): ranges of keys of at most `slice` rows, one
    /// statement each; the other items as they are. All items as they are unless the rows are in
    /// key order.
    static func touchRanges(
        _ items: [Int32], plan: SyncPlan, run: Int = touchRun,
        slice: Int = touchSlice
    ) -> (ranges: [(first: String, last: String)], alone: [Int32]) {
        let rows = plan.records
        guard rows.inKeyOrder, items.count >= run else { return ([], items) }
        var itemOfRow = [Int32](repeating: -1, count: rows.count)
        for item in items {
            if let row = plan.previous(at: Int(item)) { itemOfRow[row.position] = item }
        }
        var ranges: [(first: String, last: String)] = []
        var alone: [Int32] = []
        var start = 0
        while start < rows.count {
            guard itemOfRow[start] >= 0 else {
                start += 1
                continue
            }
            var end = start
            while end + 1 < rows.count, itemOfRow[end + 1] >= 0 { end += 1 }
            if end - start + 1 >= run {
                // At most a slice of rows to a range: each is a transaction of its own.
                for first in stride(from: start, through: end, by: slice) {
                    ranges.append((rows.row(first).url, rows.row(min(first + slice - 1, end)).url))
                }
            } else {
                alone += itemOfRow[start...end]
            }
            start = end + 1
        }
        return (ranges, alone)
    }

    /// Tells the ledger what the last commit stored; the rows it had no room for fail.
    private mutating func tellLedgerCommitted() {
        let dropped = batch.notStored.isEmpty ? [] : Set(batch.notStored.compactMap(\.origin.item))
        for row in uncommitted {
            ledger.record(
                row.event(
                    stored: dropped.isEmpty || !dropped.contains(row.item),
                    stale: plan.previous(at: row.item).map { store.contains($0.object) } ?? false))
        }
        uncommitted.removeAll(keepingCapacity: true)
    }

    /// Refreshes "last used" of the rows in `ranges`, holding the cache's lock for that only.
    mutating func commit(touchRanges ranges: [(first: String, last: String)], at time: Double) async throws(CacheError) {
        let lock = try await CacheLock.forCommit(directory: store.root, context: context)
        defer { lock.release() }
        try index.touch(ranges: ranges, at: time)
    }

    /// Commits what finished since the last commit (see `BatchCommit`), holding the cache's lock
    /// for that only: other runs' downloads go on meanwhile, and their commits wait their turn.
    mutating func commit(touches: [String], at time: Double) async throws(CacheError) {
        defer { lastCommit = Date() }
        guard !batch.isEmpty || !touches.isEmpty else { return }
        let lock = try await CacheLock.forCommit(directory: store.root, context: context)
        defer { lock.release() }
        try batch.commit(index: index, touches: touches, at: time)
        tellLedgerCommitted()
        if !batch.notStored.isEmpty {
            diskFull = true
            logger.warning(
                "the disk is full: \(batch.notStored.count) entries verified but not stored (no room for their rows); the next sync fetches them"
            )
        }
        for url in batch.vanished {
            logger.warning(
                "\(Redact.url(url)): its stored content was removed by another run before this one recorded it; the next sync fetches it")
        }
    }
}
