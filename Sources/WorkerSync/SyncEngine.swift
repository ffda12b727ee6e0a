import FoundationEssentials
import Glibc
import Logging
import WorkerFetch
import WorkerManifest
import WorkerPlan
import WorkerReport
import WorkerStore
import WorkerSupport

/// A finished sync: its report, and its ledger for what the report does not keep (each item's
/// outcome, when `SyncOptions.keepsOutcomes` asked for them).
struct SyncResult {
    let report: SyncReport
    let ledger: SyncLedger
}

/// Runs the pipeline: Manifest → SyncPlan → fetch results → store + index → SyncReport.
public struct SyncEngine: Sendable {
    public let options: SyncOptions
    /// The command's logger, lock notices and stop request.
    public let context: RunContext
    var logger: Logger { context.logger }

    public init(options: SyncOptions, context: RunContext = RunContext()) {
        self.options = options
        self.context = context
    }

    // MARK: - Read-ahead

    /// Starts reading the index rows (and listing the objects, when the manifests look large
    /// enough to name most of them) on another thread, so that it overlaps parsing the manifests.
    /// Reads only, and nothing without an index: a manifest that fails to parse has changed
    /// nothing. `sync` uses the result only if no other writer has committed in between.
    func prefetch(manifestPaths: [String]) -> Task<CachePrefetch?, Never> {
        let options = options
        return Task.detached {
            CachePrefetch(
                cacheDirectory: options.cacheDirectory, validators: options.revalidate,
                shards: options.shard.count, manifestBytes: ManifestLoader.totalBytes(manifestPaths))
        }
    }

    /// Whether a sync into `cacheDirectory` surely downloads over the network: it has no index
    /// yet (every http(s) entry is a download) and the run is not `--offline`.
    public static func surelyDownloads(cacheDirectory: String, offline: Bool) -> Bool {
        surelyDownloads(indexed: hasIndex(cacheDirectory), offline: offline)
    }

    private static func surelyDownloads(indexed: Bool, offline: Bool) -> Bool {
        !offline && !indexed
    }

    /// Whether the cache at `cacheDirectory` has an index file (a new one has none).
    private static func hasIndex(_ cacheDirectory: String) -> Bool {
        access(CacheLayout.indexPath(cacheDirectory), F_OK) == 0
    }

    // MARK: - Sync

    /// Reads the manifests (while another thread reads the index ahead) and syncs them: the
    /// whole run from manifest paths to report, outputs written. A run that cannot read its
    /// manifests publishes nothing and still writes its outputs, with the error.
    public func sync(manifestPaths arguments: [String]) async throws(SyncFailure) -> SyncReport {
        let startedAt = Date()
        do {
            return try await readAndSync(arguments)
        } catch {
            switch error {
            case .manifest, .manifestUnavailable, .refused: writeUnread(arguments, error: error, startedAt: startedAt)
            case .rewriteRefused, .settings, .cache, .engines: break
            }
            throw error
        }
    }

    private func readAndSync(_ arguments: [String]) async throws(SyncFailure) -> SyncReport {
        // Manifests by URL are fetched, signatures verified, before anything else. Remote ones
        // accepted before are read from their copies while a conditional request asks whether
        // they changed (its 200 is the new copy); nothing is planned before it says no.
        var confirmation: Task<ManifestConfirmation, Never>?
        let opened: OpenedManifests
        if let copies = acceptedCopies(arguments) {
            opened = copies.opened
            confirmation = Task { await self.confirm(copies.checks) }
        } else {
            opened = try await openManifests(arguments)
        }
        if let report = try await keeping(opened).syncOpened(opened, confirmation: confirmation) { return report }
        let fetched = try await openManifests(arguments, documents: await confirmation?.value.documents ?? [:])
        guard let report = try await keeping(fetched).syncOpened(fetched, confirmation: nil) else {
            throw .manifestUnavailable("the manifests changed while they were read")
        }
        return report
    }

    /// The outputs of a run that could not read its manifests: no entry, the error.
    private func writeUnread(_ arguments: [String], error: SyncFailure, startedAt: Date) {
        guard !options.outputs.files.isEmpty else { return }
        var report = SyncReport(
            startedAt: startedAt, finishedAt: Date(), cacheDirectory: options.cacheDirectory,
            manifests: arguments.map {
                SyncReport.ManifestSummary(
                    path: Redact.url($0), name: ManifestLoader.defaultName(Redact.url($0)),
                    entries: 0)
            })
        report.error = error.exitMessage
        report.succeeded = false
        do throws(CacheError) {
            try options.outputs.write(report, success: false)
        } catch {
            logger.warning("\(error)")
        }
    }

    /// The run of `opened`; nil when `confirmation` says a remote manifest changed (nothing was
    /// done: the caller reads what it fetched and runs again).
    private func syncOpened(
        _ opened: OpenedManifests, confirmation: Task<ManifestConfirmation, Never>?
    ) async throws(SyncFailure) -> SyncReport? {
        let manifestPaths = opened.paths
        // Into a cache without an index every http(s) entry is a download: the transport starts
        // loading its library now, beside the manifests (later, once the plan is drawn, the
        // 300-file cold sync took ~15 ms longer; docs/ARCHITECTURE.md), and there are no rows to
        // read ahead (nor a task to make for it: a thread the pool makes during the load waits for
        // it). A run that then downloads nothing over the network never needs the library.
        let indexed = Self.hasIndex(options.cacheDirectory)
        let ahead = Self.surelyDownloads(indexed: indexed, offline: options.offline) ? options.fetch.transport : nil
        ahead?.prepare()
        defer { ahead?.settle() }
        let prefetched = indexed ? prefetch(manifestPaths: manifestPaths) : nil
        // A copy that fails (expired, say) is only the copy: when the publisher has a newer one,
        // that one is read instead.
        let changed = { () async -> Bool in
            guard let confirmation else { return false }
            return await !confirmation.value.unchanged
        }
        var set: ManifestSet
        var locator = options.fetch.locator
        let accepted: AcceptedManifests
        do throws(SyncFailure) {
            var loader = ManifestLoader()
            loader.collectsTree = options.collectsTree
            loader.remoteSources = opened.remoteSources
            loader.remoteEnvironment = options.trust.environment
            do {
                set = try loader.load(paths: manifestPaths)
            } catch {
                throw .manifest(error)
            }
            (set, locator) = try await expanding(set)
            accepted = try acceptManifests(set, opened)
            if let tree = options.tree {
                do throws(CacheError) {
                    try TreePublisher(path: tree).check()
                } catch {
                    throw .cache(error)
                }
            }
        } catch {
            _ = await prefetched?.value
            if await changed() { return nil }
            throw error
        }
        if await changed() {
            _ = await prefetched?.value
            return nil
        }
        // The registries its tags were read from, as reached and authorized then.
        var reached = options
        reached.fetch.locator = locator
        let report = try await SyncEngine(options: reached, context: context).syncLoaded(set, prefetched: prefetched).report
        do throws(CacheError) {
            try record(accepted)
        } catch {
            throw .cache(error)
        }
        return report
    }

    /// The run of manifests already read: plans, downloads what is missing or changed, verifies,
    /// stores, indexes and reports, using what `prefetch` read ahead (when given) if no other
    /// writer has committed since. Throws only what stops the whole run: the cache is unusable or
    /// locked.
    /// Several runs may write one cache at once: each joins its writers (`WriterSlot`) and holds
    /// the cache's lock only to start (tidy, plan), to commit each batch and to finish; its
    /// downloads overlap the other runs'.
    func syncLoaded(_ manifests: ManifestSet, prefetched: Task<CachePrefetch?, Never>? = nil) async throws(SyncFailure) -> SyncResult {
        let startedAt = Date()
        // Settings of its kinds a run cannot use (AWS's, for s3:// URLs) stop it before the cache
        // is touched (the run's requests are made with this locator).
        let locator: Locator
        do throws(KindSettingsProblem) {
            locator = try options.fetch.locator.configuring(Self.signedKinds(manifests))
        } catch {
            _ = await prefetched?.value
            throw .settings(error)
        }
        // --rewrite's rules against the run's locations, before any request (strict: refused whole).
        let rewrite: SyncReport.Rewrite?
        switch Self.checkRewrite(manifests, locator: locator) {
        case .success(let checked): rewrite = checked
        case .failure(let error):
            _ = await prefetched?.value
            throw error
        }
        for from in rewrite?.unmatched ?? [] {
            logger.warning("--rewrite \(from)=…: no URL of this run is under FROM (a typo would send every request to the origin itself)")
        }
        if let problem = CacheAccess.writeProblem(root: options.cacheDirectory) {
            _ = await prefetched?.value
            throw .cache(.notWritable(problem))
        }
        return try await syncChecked(manifests, prefetched: prefetched, startedAt: startedAt, locator: locator, rewrite: rewrite)
    }

    /// `syncLoaded` once the run's settings and rules are checked: the cache's part.
    private func syncChecked(
        _ manifests: ManifestSet, prefetched: Task<CachePrefetch?, Never>?, startedAt: Date, locator: Locator,
        rewrite: SyncReport.Rewrite?
    ) async throws(SyncFailure) -> SyncResult {
        let store: ContentStore, job: CacheLock?
        do throws(CacheError) {
            store = try ContentStore(root: options.cacheDirectory)
            job =
                options.recordsManifestRuns
                ? try await JobLock.take(
                    directory: options.cacheDirectory, manifests: manifests.manifests.map { Self.absolute($0.path) },
                    shard: options.shard, wait: options.waitLock, context: context) : nil
        } catch {
            throw .cache(error)
        }
        defer { job?.release() }
        let slot: WriterSlot
        do throws(CacheError) {
            slot = try await WriterSlot(directory: options.cacheDirectory, wait: options.waitLock, stop: context.stop)
        } catch {
            throw .cache(error)
        }
        // However the run ends, a new cache it made has all its fan-out folders.
        defer {
            store.completeLayout()
            slot.release()
        }
        let (plan, index): (SyncPlan, CacheIndex)
        do throws(CacheError) {
            (plan, index) = try await start(manifests, store: store, slot: slot, prefetched: prefetched)
        } catch {
            throw .cache(error)
        }
        return try await run(
            plan, manifests: manifests, store: store, index: index, startedAt: startedAt, locator: locator,
            rewrite: rewrite)
    }

    /// Entries from which a new cache's first sync builds its index of rows by object at its end.
    static let objectIndexDeferredFrom = 1_000

    /// The kinds signed with the run's settings (`s3://`) that an entry, or a mirror of one, is of.
    private static func signedKinds(_ manifests: ManifestSet) -> Set<URLKindID> {
        let entries = manifests.entries
        var kinds: Set<URLKindID> = []
        let signed = { (url: String) in URLKinds.kind(of: url).flatMap { $0.roles.contains(.signed) ? $0.id : nil } }
        for position in entries.indices {
            if let id = entries.withURL(at: position, { URLKinds.kind(utf8: $0).flatMap { $0.roles.contains(.signed) ? $0.id : nil } }) {
                kinds.insert(id)
            }
            for mirror in entries.mirrors(at: position) { signed(mirror).map { _ = kinds.insert($0) } }
        }
        for manifest in manifests.manifests {
            for prefix in manifest.mirrors.prefixes { for mirror in prefix.mirrors { signed(mirror).map { _ = kinds.insert($0) } } }
        }
        return kinds
    }

    /// The start of a run, under the lock: a writer alone deletes what dead runs left in `tmp/`;
    /// the index is made (or brought up to this schema), the plan drawn, and objects no row names
    /// swept — left by a run stopped between installing and indexing them (its `unclean` mark
    /// says so), or copied in by hand: from the folders' listing when the plan made one, else by
    /// listing them when a run died or the cache is small; a large cache planned object by
    /// object leaves hand-made ones to gc.
    private func start(
        _ manifests: ManifestSet, store: ContentStore, slot: WriterSlot,
        prefetched: Task<CachePrefetch?, Never>?
    ) async throws(CacheError) -> (SyncPlan, CacheIndex) {
        let lock = try await CacheLock(directory: options.cacheDirectory, wait: options.waitLock, context: context)
        defer { lock.release() }
        var deadMarks: [String] = []
        if slot.alone {
            let stale = store.removeStaleTemporaryFiles()
            if stale > 0 { logger.info("removed \(stale) temporary files left by an earlier run") }
            deadMarks = store.uncleanMarks()
        }
        slot.share()
        // A new cache's first large sync builds the index of rows by object after its rows are in
        // (`CacheIndex.init`); a small one keeps it up as it goes (the build's lock and
        // transaction at the end cost a 300-file sync about as much as they save).
        let index = try CacheIndex(
            path: CacheLayout.indexPath(options.cacheDirectory), create: true,
            deferObjectIndex: manifests.entries.count >= Self.objectIndexDeferredFrom)
        let (plan, objects) = try makePlan(manifests, index: index, prefetched: await prefetched?.value)
        if !store.isNew, !deadMarks.isEmpty || ListingRule.listsEveryRun(records: plan.records.count) { objects.preloadIfNeeded() }
        let swept = store.removeUnreferenced(objects, rows: plan.records)
        if swept > 0 { logger.info("removed \(swept) objects no entry names") }
        store.removeMarks(deadMarks)
        return (plan, index)
    }

    /// Downloads and commits (`SyncRun`), then records the run, writes the outputs and finishes.
    private func run(
        _ plan: SyncPlan, manifests: ManifestSet, store: ContentStore, index: CacheIndex,
        startedAt: Date, locator: Locator, rewrite: SyncReport.Rewrite?
    ) async throws(SyncFailure) -> SyncResult {
        var options = options
        options.fetch.locator = locator
        var run = SyncRun(
            plan: plan, store: store, index: index, options: options, context: context,
            ledger: ledger(for: plan, startedAt: startedAt, store: store))
        try await run.execute()
        do throws(CacheError) {
            if options.recordsManifestRuns {
                try recordRuns(manifests, run: run, at: Date().timeIntervalSince1970)
            }
            if let tree = options.tree {
                // A publish that fails still leaves every output written, with its failure in them.
                do throws(CacheError) {
                    run.ledger.record(
                        .tree(try await publishTree(at: tree, manifests: manifests, index: run.index, run: run), failure: nil))
                } catch {
                    let publisher = TreePublisher(path: tree)
                    run.ledger.record(
                        .tree(
                            TreeOutcome(
                                path: publisher.path, version: (try? publisher.currentVersion()) ?? "",
                                error: error.description), failure: error))
                }
            }
            var report = run.ledger.report(finishedAt: Date(), budget: options.failureBudget)
            report.rewrite = rewrite
            try options.outputs.write(report, success: report.succeeded && report.treeFailure == nil)
            try await run.finish()
            return SyncResult(report: report, ledger: run.ledger)
        } catch {
            throw .cache(error)
        }
    }

    /// The run's ledger: rows kept for the outputs that list them (JUnit has a case per entry
    /// checked), the limits the run keeps, one outcome per item when asked for.
    func ledger(for plan: SyncPlan, startedAt: Date, store: ContentStore) -> SyncLedger {
        let limited = options.fetch.limitRate != nil || options.fetch.maxRequestsPerSecond != nil
        return SyncLedger(
            plan: plan, cacheDirectory: options.cacheDirectory, startedAt: startedAt, outputs: options.outputs,
            shownRows: options.shownRows,
            limits: limited
                ? SyncReport.Limits(
                    limitRate: options.fetch.limitRate,
                    maxRequestsPerSecond: options.fetch.maxRequestsPerSecond) : nil,
            store: store, keepsOutcomes: options.keepsOutcomes, keepsObjects: options.tree != nil)
    }

    private func recordRuns(_ manifests: ManifestSet, run: SyncRun, at finished: Double) throws(CacheError) {
        let failedPerManifest = run.ledger.failuresPerManifest
        do throws(CacheError) {
            try run.index.recordRuns(
                manifests.manifests.enumerated().map { offset, manifest in
                    ManifestRun(
                        path: Self.isRemoteManifest(manifest.path) ? Redact.url(manifest.path) : Self.absolute(manifest.path),
                        name: manifest.name, entries: manifest.entryCount,
                        finishedAt: finished, failed: failedPerManifest[offset])
                })
        } catch  where error.isDiskFull {
            logger.warning("the disk is full: this run of the manifests is not recorded (status shows the last one)")
        }
    }

    static func absolute(_ path: String) -> String {
        URL(fileURLWithPath: path).standardizedFileURL.path
    }
}
