import FoundationEssentials
import Glibc
import Logging

/// One sync after planning: the plan's download groups go through the queue, each result goes
/// to the batch commit (objects and index rows) and the report builder (totals and rows), in
/// that one direction. Downloads and pruning are in `SyncRun+Downloads` and `SyncRun+Prune`.
struct SyncRun {
    let plan: SyncPlan
    let store: ContentStore
    let index: CacheIndex
    let options: SyncOptions
    let context: RunContext
    var logger: Logger { context.logger }

    var rows: ReportBuilder
    /// Builds report rows; apart from `self`, so a row can be built while `rows` is changed.
    let factory: RowFactory
    /// Fields of the report other than totals and rows (prune, origins).
    var report = SyncReport(startedAt: Date(), finishedAt: Date(), cacheDirectory: "", manifests: [])
    /// The manifest of every failed entry, for the per-manifest run record.
    private(set) var failedManifestIndexes: [Int] = []
    /// Failed entries per origin, for the report's `unreachable_origins`.
    var failedByOrigin: [String: Int] = [:]
    /// What finished since the last commit.
    var batch: BatchCommit
    /// URLs confirmed current by a 304: their "last used" is refreshed at the end.
    var pendingTouches: [String] = []
    /// Objects the run's rows stopped naming (a URL's previous version). `finish()` deletes the
    /// ones no row names, after the outputs were written (the HTML report shows them as
    /// "before"), so no object is left that the index does not know.
    private var replaced: Set<String> = []
    var lastCommit = Date()
    /// The fetch engines closing their connections after the downloads (see `download`).
    var stopping: Task<Void, Never>?
    var progress = SyncProgress(total: 0, done: 0, failed: 0, bytes: 0, started: Date())

    init(plan: SyncPlan, store: ContentStore, index: CacheIndex, options: SyncOptions, context: RunContext) {
        self.plan = plan
        self.store = store
        self.index = index
        self.options = options
        self.context = context
        batch = BatchCommit(store: store)
        rows = ReportBuilder(listLimit: options.listLimit, reportAll: options.reportAll)
        factory = RowFactory(store: store, manifestNames: plan.manifests.manifests.map(\.name))
    }

    /// Runs the plan and returns its report: totals, rows in manifest order, origins, pruning.
    mutating func execute() async throws(CacheError) -> SyncReport {
        let now = Date().timeIntervalSince1970
        var touches: [String] = []
        for (offset, item) in plan.items.enumerated() {
            switch item.action {
            case .keep:
                rows.add(.unchanged, order: offset) { [factory] in
                    factory.entry(item, status: .unchanged, object: item.previous?.object, size: item.previous?.size)
                }
                // Like relatime: refresh "last used" at most hourly, so warm runs write nothing.
                if let previous = item.previous, previous.lastUsed < now - 3600 { touches.append(item.entry.url) }
            case .reuse(let object, let size):
                link(offset, object: object, size: size, status: .reused, body: nil, attempts: nil)
            case .repair:
                logger.warning("\(Redact.url(item.entry.url)): the cached file's size is not the index's (changed on disk); fetching it again")
            case .download, .revalidate, .refresh:
                break
            }
        }
        let groups = plan.downloadGroups(refresh: options.refresh)
        progress.total = groups.reduce(0) { $0 + $1.items.count }
        progress.started = Date()
        // A first snapshot, so progress can be shown before the first download ends.
        if progress.total > 0, !options.offline { options.onProgress?(progress) }
        do throws(CacheError) {
            if options.offline {
                for group in groups { failOffline(group) }
            } else if !groups.isEmpty {
                try await download(groups)
            }
            try await commit(touches: touches + pendingTouches, at: now)
            try await prune()
        } catch {
            await stopping?.value
            throw error
        }
        await stopping?.value
        var report = report
        report.totals = rows.totals
        report.totals.entries = plan.items.count
        report.entries = rows.entries
        report.orphans = plan.orphans.count
        return report
    }

    // MARK: - Results

    /// A group's results: the first delivered body is linked to the items not tried.
    mutating func record(_ group: DownloadGroup, _ results: [DownloadQueue.ItemResult],
                         progress live: (@Sendable () -> SyncProgress)? = nil) {
        defer {
            progress.done += group.items.count
            progress.failed = rows.totals.failed
            if let live {
                let now = live()
                (progress.bytes, progress.bytesTotal) = (now.bytes, now.bytesTotal)
            } else {
                progress.bytes = rows.totals.bytesDownloaded
            }
            options.onProgress?(progress)
        }
        var delivered: FetchedBody?
        for tried in results {
            let (item, result) = (tried.item, tried.result)
            let planned = plan.items[item]
            rows.totals.bytesDownloaded += result.bytesReceived
            switch result.result {
            case .success(.notModified):
                // 304: the stored version is current; only "last used" changes.
                pendingTouches.append(planned.entry.url)
                rows.add(.unchanged, order: item) { [factory] in
                    factory.entry(planned, status: .unchanged, object: planned.previous?.object, size: planned.previous?.size,
                          attempts: result.attempts)
                }
            case .success(.body(let body)):
                delivered = body
                batch.addBytes(body.size)
                let status: EntryStatus
                if planned.action == .refresh { rows.totals.refreshed += 1 }
                if planned.action == .repair {
                    rows.totals.repaired += 1
                    status = .updated
                } else if planned.action == .revalidate || planned.action == .refresh {
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
        let tried = Set(results.map(\.item))
        for item in group.items where !tried.contains(item) {
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
        rows.add(status, order: item) { [factory] in
            var row = factory.entry(planned, status: status, object: object, size: size, attempts: attempts)
            if planned.action == .repair, status != .reused {
                row.refetched = "the cached file's size was not the index's (it changed on disk)"
            }
            return row
        }
    }

    mutating func fail(_ item: Int, _ failure: FetchFailure, attempts: Int) {
        let planned = plan.items[item]
        failedManifestIndexes.append(planned.entry.manifest)
        if LocalFile.path(of: planned.entry.url) == nil { failedByOrigin[Fetcher.origin(of: planned.entry.url), default: 0] += 1 }
        rows.add(.failed, order: item) { [factory] in
            var row = factory.entry(planned, status: .failed, object: nil, size: nil, attempts: attempts)
            row.reason = failure.reason
            row.error = failure.message
            row.httpStatus = failure.httpStatus
            row.actualHash = failure.actualHash?.description
            row.stale = planned.previous.map { factory.store.contains($0.object) } ?? false
            return row
        }
        if failure.reason != .cancelled || attempts > 0 {
            batch.add(failure: FailureRecord(url: planned.entry.url, reason: failure.reason.rawValue, error: failure.message,
                                             attempts: attempts, at: Date().timeIntervalSince1970,
                                             getOnly: !options.recordsManifestRuns))
        }
        logger.debug("entry failed", metadata: ["entry.url": "\(Redact.url(planned.entry.url))",
                                                "entry.reason": "\(failure.reason.rawValue)"])
    }

    // MARK: - Commit and finish

    /// Commits what finished since the last commit (see `BatchCommit`), holding the cache's lock
    /// for that only: other runs' downloads go on meanwhile, and their commits wait their turn.
    mutating func commit(touches: [String], at time: Double) async throws(CacheError) {
        defer { lastCommit = Date() }
        guard !batch.isEmpty || !touches.isEmpty else { return }
        let lock = try await CacheLock.forCommit(directory: store.root, context: context)
        defer { lock.release() }
        try batch.commit(index: index, touches: touches, at: time)
        for url in batch.vanished {
            logger.warning("\(Redact.url(url)): its stored content was removed by another run before this one recorded it; the next sync fetches it")
        }
    }

    /// Deletes the previous versions no row names any more, then clears this process's mark (a
    /// crash would have left it). The last step of a run, under the lock.
    mutating func finish() async throws(CacheError) {
        guard !replaced.isEmpty || batch.markedUnclean else { return }
        let lock = try await CacheLock.forCommit(directory: store.root, context: context)
        defer { lock.release() }
        for object in replaced where try index.references(object: object) == 0 {
            store.remove(object)
        }
        replaced.removeAll()
        if batch.markedUnclean { store.markClean() }
    }
}

/// A plan item's report row, with the paths of its objects.
struct RowFactory {
    let store: ContentStore
    let manifestNames: [String]

    func entry(_ planned: PlannedEntry, status: EntryStatus, object: String?, size: Int64?,
               attempts: Int? = nil) -> SyncReport.Entry {
        SyncReport.Entry(
            url: Redact.url(planned.entry.url),
            hash: planned.entry.hash?.description,
            status: status,
            previousHash: status == .updated ? planned.previous.map { $0.hash ?? "sha256:" + $0.object } : nil,
            bytes: size,
            attempts: attempts,
            path: object.map(store.objectPath),
            manifest: manifestNames[planned.entry.manifest],
            previousPath: status == .updated || status == .failed ? planned.previous.map { store.objectPath($0.object) } : nil
        )
    }
}
