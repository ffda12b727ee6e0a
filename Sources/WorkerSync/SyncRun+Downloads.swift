import FoundationEssentials
import Glibc
import Logging
import WorkerFetch
import WorkerManifest
import WorkerPlan
import WorkerReport
import WorkerStore
import WorkerSupport

extension SyncRun {
    /// The longest a verified body waits for its commit in a run that uploads to a tier (the
    /// upload reads the installed object). BENCHMARKS.md as of 278b2e0, "Mirrors and machines that start together".
    static let tierCommitInterval = 0.01

    /// Entries a batch commits: a quarter of a run's downloads, at least 64, at most `largest`.
    /// A run of fewer than `largest` downloads was one batch, whose commit installed every object
    /// at the run's end while nothing else ran; committed a quarter at a time, the installs
    /// overlap the downloads still running (a 300-file cold sync on tmpfs: 42.5 → 40.6 ms, the
    /// same CPU; BENCHMARKS.md as of 278b2e0, "Where a 300-file cold sync's time goes"). At most four flushes
    /// for a small run instead of one; a large run's batches are as before.
    static func batchSize(downloads: Int, largest: Int) -> Int {
        max(min(64, largest), min(largest, downloads / 4))
    }

    /// The run's locator while its downloads last (`LiveLocator`): what the kinds of the URLs to
    /// fetch ask before their requests (a registry reached, its token), asked before the plan is
    /// grouped, so that each group's route is where its requests go; tokens are kept current.
    func liveLocator() async -> LiveLocator {
        guard network else { return LiveLocator(fixed: options.fetch.locator) }
        // Only URLs of kinds whose requests carry the run's credentials are kept (told from the
        // entries' bytes: no string is made for the rest). A pinned entry's mirrors are read as
        // written; the map's are made only where the map points at such a kind.
        var urls: [String] = []
        let entries = plan.manifests.entries
        let mapsSigned = plan.manifests.manifests.map { $0.mirrors.prefixes.contains { $0.mirrors.contains { URLKinds.has(.signed, $0) } } }
        for position in plan.items.indices where plan.action(at: position).needsNetwork {
            if entries.withURL(at: position, { URLKinds.kind(utf8: $0)?.roles.contains(.signed) == true }) {
                urls.append(entries.url(at: position))
            }
            guard entries.hash(at: position) != nil else { continue }
            urls += entries.mirrors(at: position).filter { URLKinds.has(.signed, $0) }
            let manifest = entries.manifest(at: position)
            if mapsSigned[manifest] {
                urls += plan.manifests.manifests[manifest].mirrors.mirrors(for: entries.url(at: position)).filter {
                    URLKinds.has(.signed, $0)
                }
            }
        }
        let logger = logger
        return await LiveLocator(options.fetch.locator, for: urls, store: store, settings: options.fetch) { logger.warning("\($0)") }
    }

    /// Whether an item of the plan needs the network: one to fetch that is not a local file.
    var network: Bool {
        plan.items.indices.contains { plan.action(at: $0).needsNetwork && !LocalFile.isLocal(plan.manifests.entries.url(at: $0)) }
    }

    /// Runs the groups through a `DownloadQueue`, recording results as they come and committing
    /// a batch whenever it is full or old enough. The fetch engines, idle once every group is
    /// done, close their connections while the last batch commits: `execute` waits for
    /// `stopping` after it, or before it throws. `locators`: the run's (`liveLocator`), which
    /// the groups' routes were made with; `fetcher`: the run's engines, which it shuts down.
    mutating func download(_ groups: [DownloadGroup], with fetcher: Fetcher, locators: LiveLocator) async throws(CacheError) {
        // Origins an earlier run gave up on are probed with one request before the rest.
        let remembered: [UnhealthyOrigin]
        do throws(CacheError) {
            remembered = try index.unhealthyOrigins()
        } catch {
            await fetcher.shutdown()
            throw error
        }
        let breaker = OriginBreaker(down: Set(remembered.map { Origin.of($0.origin) }))
        // `--max-streams` is per connection, and each engine keeps one connection to an HTTP/2 origin.
        // Each request is made as its item starts, the first of a group on the group's route.
        // (A locator whose tokens are not renewed is read once, not per request.)
        let planned = plan
        let request: @Sendable (Int, Route?) -> FetchRequest
        if locators.renews {
            request = { item, route in planned.request(for: item, locator: locators.current, route: route) }
        } else {
            let locator = locators.current
            request = { item, route in planned.request(for: item, locator: locator, route: route) }
        }
        let queue = DownloadQueue(
            fetcher: fetcher, groups: groups, jobs: options.fetch.jobs,
            streams: options.fetch.maxStreams * fetcher.engines.count, breaker: breaker, request: request)
        var failure: CacheError?
        let timerEngine = fetcher.engines[0]
        let uploads = fetcher.uploads
        remoteTier = fetcher.remote
        tierUploads = uploads
        // One way to stop the downloads: the command's stop request (SIGINT, SIGTERM), the
        // deadline and a commit that failed each ask the run's own, which stops the queue (those
        // in flight end as `cancelled`, with its reason) and the uploads.
        let stop = StopRequest()
        _ = stop.watch { reason in
            queue.stop(because: reason)
            uploads?.stop(because: reason)
        }
        let relay = context.stop.watch { stop.request($0) }
        // Progress counts bytes as they arrive: a snapshot every quarter second from the clock,
        // also while one long download is the only thing running.
        let live = LiveProgress(progress)
        let meter = fetcher.meter
        let snapshot = { @Sendable () -> SyncProgress in
            var current = live.value
            current.bytes = meter.bytes
            current.bytesTotal = queue.allStarted ? meter.bytesOutstanding.map { current.bytes + $0 } : nil
            return current
        }
        // The consumer looks at least twice a batch interval, so that a finished entry is
        // committed within it (docs/CACHE.md) while long downloads are all that runs. With uploads
        // to a tier, whose objects go up once a commit has installed them, commits come more
        // often: runners that start together find on the tier what another fetched. The run's
        // one clock reports progress and reaches the deadline.
        let interval = uploads == nil ? options.batchInterval : min(options.batchInterval, Self.tierCommitInterval)
        let now = Monotonic.now()
        let onProgress = options.onProgress
        let deadline = options.deadline
        let clock = RunClock(
            RunClockSchedule(
                start: now, progressEvery: onProgress == nil ? nil : 0.25,
                deadline: deadline.map { now + $0 }),
            on: timerEngine,
            actions: RunClock.Actions(
                progress: { onProgress?(snapshot()) },
                deadline: { [logger] in
                    logger.info("deadline reached; cancelling downloads in flight")
                    stop.request("the run's deadline (--deadline \(Units.formatDuration(deadline ?? 0))) passed")
                }))
        clock.start(now: now)
        let batchSize = Self.batchSize(downloads: groups.count, largest: options.batchSize)
        queue.start()
        // A full disk (a body that could not be written — the queue stopped itself then — or rows
        // the index had no room for) stops the run asking: every later body would meet it too.
        var stoppedForSpace = false
        let stopIfFull = { [logger] (full: Bool) in
            guard full, !stoppedForSpace else { return }
            stoppedForSpace = true
            logger.warning("the disk is full: no new downloads start; what was verified and fits is kept")
            stop.request(DownloadQueue.noSpaceReason)
        }
        for await finished in queue.batches(every: interval / 2) {
            if queue.stoppedForSpace || finished.contains(where: { $0.results.contains { Self.isNoSpace($0.result) } }) { diskFull = true }
            stopIfFull(diskFull)
            for group in finished {
                record(groups[group.group], group.results, progress: snapshot)
            }
            live.value = progress
            if failure == nil, !batch.isEmpty,
                batch.upserts.count >= batchSize || batch.bytes >= options.batchBytes
                    || Date().timeIntervalSince(lastCommit) >= interval
            {
                do throws(CacheError) { try await commit(touches: [], at: Date().timeIntervalSince1970) } catch {
                    failure = error
                    stop.request("the run was cancelled")
                }
                stopIfFull(diskFull)
            }
        }
        clock.downloadsEnded()
        // Uploads to the tier go on while the last batch commits, and take what it installs (the
        // offers close after it; the deadline and a stop request still cut them short), then the
        // engines close their connections.
        stopping = Task { [context] in
            if let uploads {
                if queue.isStopped { uploads.stop(because: queue.stopReason) }
                await uploads.finished()
            }
            context.stop.unwatch(relay)
            clock.stop()
            await fetcher.shutdown()
        }
        let unstarted =
            diskFull
            ? FetchFailure(.io, "no space left on the device: not tried (the disk filled during the run)", detail: .noSpace)
            : FetchFailure(.cancelled, "\(queue.stopReason) before this entry started")
        for number in queue.unstarted {
            for item in groups[number].items {
                fail(item, unstarted, attempts: 0, origin: groups[number].origin)
            }
        }
        if let failure { throw failure }
        try recordOrigins(queue.originSummaries, remembered: remembered)
    }

    /// Whether a download failed on a full disk.
    static func isNoSpace(_ result: FetchResult) -> Bool {
        if case .failure(let failure) = result.result { return failure.detail == .noSpace }
        return false
    }

    /// Puts the origins given up in the report and the index; forgets those that answered.
    private mutating func recordOrigins(
        _ summaries: [OriginBreaker.Summary],
        remembered: [UnhealthyOrigin]
    ) throws(CacheError) {
        let now = Date().timeIntervalSince1970
        // The index names origins as an earlier run spelled them.
        let known = Dictionary(remembered.map { (Origin.of($0.origin), $0) }, uniquingKeysWith: { first, _ in first })
        var down: [(origin: String, problem: String)] = []
        for summary in summaries {
            guard let problem = summary.openedFor else { continue }
            down.append((known[summary.origin]?.origin ?? summary.origin.name, problem))
            ledger.record(
                .originGivenUp(
                    SyncReport.OriginProblem(
                        origin: summary.origin.name, problem: problem, since: Timestamp.iso(known[summary.origin]?.since ?? now),
                        failed: ledger.failures(of: summary.origin), notTried: summary.notTried)))
            logger.info("origin unreachable", metadata: ["origin": "\(summary.origin)", "origin.problem": "\(problem)"])
        }
        // Only an origin remembered as down has a row to forget (the run holds the lock: no
        // other writer adds one meanwhile), so a run whose origins were all well writes nothing.
        let reached = summaries.filter { $0.answered && $0.openedFor == nil }.compactMap { known[$0.origin]?.origin }
        do throws(CacheError) {
            try index.recordOrigins(down: down, reached: reached, at: now)
        } catch  where error.isDiskFull {
            logger.warning("the disk is full: the origins' health is not recorded for the next run")
        }
    }

    /// `--offline`: what would need the network fails as `cancelled`; earlier versions stay.
    mutating func failOffline(_ group: DownloadGroup) {
        for item in group.items {
            let planned = plan.item(at: item)
            if planned.action == .revalidate { continue }
            let message = planned.isUpdate ? "offline: the cached version is out of date" : "offline: not in the cache"
            fail(item, FetchFailure(.cancelled, message), attempts: 0, origin: group.origin)
        }
    }
}
