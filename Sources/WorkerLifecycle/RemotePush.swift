import FoundationEssentials
import Glibc
import WorkerFetch
import WorkerStore
import WorkerSupport
import WorkerSync

/// `worker push`: every object of a cache that the shared tier lacks, uploaded (`HEAD` first,
/// then `PUT {base}/cas/{hex}`), so that an existing cache seeds a tier. Reads the cache only.
/// Each object is hashed again first: a damaged one is never sent under its name. Objects only
/// rows fetched with credentials name stay local unless the tier is declared private.
public struct RemotePush: Sendable {
    public let cacheDirectory: String
    /// The network settings, with the tier in `remoteCache`.
    public let settings: FetchSettings
    public let context: RunContext

    public init(cacheDirectory: String, settings: FetchSettings, context: RunContext = RunContext()) {
        self.cacheDirectory = cacheDirectory
        self.settings = settings
        self.context = context
    }

    /// What a push did.
    public struct Result: Sendable {
        /// Distinct objects the index names that are in the cache.
        public var objects = 0
        /// What the tier did (`present`, `uploads`, `upload_errors`, …; `givenUp`).
        public var counts: RemoteTierCounts
        /// Whether a stop request (a signal) ended it.
        public var stopped = false
        /// Objects whose bytes no longer hash to their name: not uploaded (`verify --repair`).
        public var damaged: [String] = []

        /// Every object is on the tier now.
        public var complete: Bool {
            !stopped && counts.givenUp == nil && counts.uploadErrors == 0 && counts.uploadsNotDone == 0 && counts.errors == 0
                && damaged.isEmpty
        }
    }

    /// Pushes every object; `onProgress` is called a few times a second (objects done, failed,
    /// bytes sent). Fails only when the cache or the transport cannot be used.
    public func run(onProgress: (@Sendable (SyncProgress) -> Void)? = nil) async throws(PushFailure) -> Result {
        guard let remote = settings.remoteCache else { throw .engines(.resources("no remote cache was given")) }
        guard let transport = settings.transport else { throw .engines(.resources("no network transport was given to this run")) }
        let records: [IndexRecord]
        do throws(CacheError) {
            let index = try CacheIndex(path: CacheLayout.indexPath(cacheDirectory), create: false, readOnly: true)
            records = try index.allRecords(validators: false)
        } catch {
            throw .cache(error)
        }
        // An object any row fetched without credentials names is public; one only private rows
        // name stays local unless the tier is as private as the origins.
        let shareable = Set(records.filter { !$0.isPrivate || remote.uploadsPrivate }.map(\.object))
        var result = Result(counts: RemoteTierCounts(url: remote.shownURL, readOnly: false))
        var sizes: [String: Int64] = [:]
        var kept = Set<String>()
        for record in records where sizes[record.object] == nil && !kept.contains(record.object) {
            var info = stat()
            let path = CacheLayout.objectPath(cacheDirectory, record.object)
            guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
            guard shareable.contains(record.object) else {
                kept.insert(record.object)
                continue
            }
            sizes[record.object] = Int64(info.st_size)
        }
        result.counts.privateNotUploaded = kept.count
        result.objects = sizes.count + kept.count
        // Hashed again before anything is sent: a damaged object is not uploaded under its name.
        let hashed = await FileDigest.hashAll(
            sizes.keys.map { (name: $0, path: CacheLayout.objectPath(cacheDirectory, $0)) },
            width: ProcessInfo.processInfo.activeProcessorCount)
        for (name, outcome) in hashed {
            if case .success(let (digest, size)) = outcome, digest == name, size == sizes[name] { continue }
            sizes.removeValue(forKey: name)
            result.damaged.append(name)
        }
        result.damaged.sort()
        guard !sizes.isEmpty else { return result }

        let count = max(1, min(Fetcher.defaultEngineCount, remote.uploadsAtOnce))
        let shares = (0..<count).map { remote.uploadsAtOnce / count + ($0 < remote.uploadsAtOnce % count ? 1 : 0) }
        let started: EngineSet
        do throws(EngineStartFailure) {
            started = try transport.startEngines(shares: shares, settings: settings)
        } catch {
            throw .engines(error)
        }
        let tier = RemoteTier(settings: remote, logger: context.logger)
        let uploads = RemoteUploads(
            tier: tier, cacheDirectory: cacheDirectory, engines: started.engines,
            entryTimeout: settings.entryTimeout)
        let stopWatch = context.stop.watch { reason in uploads.stop(because: reason) }
        let begun = Date()
        let total = sizes.count
        let progress = { @Sendable () -> SyncProgress in
            let counts = tier.summary
            let done = counts.present + counts.uploads + counts.uploadErrors + counts.uploadsNotDone + counts.errors
            return SyncProgress(
                total: total, done: done, failed: counts.uploadErrors + counts.errors,
                bytes: counts.bytesUp, started: begun)
        }
        let ticker = Ticker()
        if let onProgress, let first = started.engines.first {
            onProgress(progress())
            ticker.every(0.25, on: first) { onProgress(progress()) }
        }
        for (object, size) in sizes.sorted(by: { $0.key < $1.key }) {
            uploads.offer(PendingUpload(sha256: object, size: size, checksFirst: true))
        }
        uploads.closeOffers()
        await uploads.finished()
        ticker.stop()
        onProgress?(progress())
        context.stop.unwatch(stopWatch)
        await withDiscardingTaskGroup { group in
            for engine in started.engines { group.addTask { await engine.shutdown() } }
        }
        started.cleanup()
        result.counts = tier.summary
        result.counts.privateNotUploaded = kept.count
        result.stopped = context.stop.reason != nil
        return result
    }
}

/// Why `push` did not run to its end: the cache cannot be read, or the engines to upload with
/// cannot start.
public enum PushFailure: Error, Sendable, ExitClassified {
    case cache(CacheError)
    case engines(EngineStartFailure)

    public var exitClass: ExitClass {
        switch self {
        case .cache(let error): error.exitClass
        case .engines(let failure): failure.exitClass
        }
    }

    public var exitMessage: String {
        switch self {
        case .cache(let error): error.exitMessage
        case .engines(let failure): failure.exitMessage
        }
    }
}
