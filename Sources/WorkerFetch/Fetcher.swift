import FoundationEssentials
import Glibc
import Logging
import Synchronization
import WorkerStore
import WorkerSupport

/// Downloads bodies into the content store: streamed to `tmp/` while hashed, verified, then
/// renamed to their object name. A group of downloads walks its fallback plan (`FallbackWalk`,
/// performed by `GroupDownload`): the shared tier, a cache beside the sources, first when it may
/// have the content; then for each member its sources (`ContentSource`: a local file) and the
/// origin's locations (`OriginSource`). A run's
/// downloads share a few `CurlEngine`s (one thread each, as many as the machine has cores, at most
/// `maxEngines`): a download and its retries and redirects stay on the engine it started on, each
/// engine keeps and multiplexes its own connections.
public final class Fetcher: Sendable {
    public let engines: [any FetchEngine]
    /// Downloads handed to each engine and not yet finished (`engineForNext` balances on them),
    /// and each engine's share of an origin's connections.
    private let loads: Mutex<[EngineLoad]>
    /// Sources asked before the origin, in order (registered in `sources(…)`).
    let sources: [any ContentSource]
    /// The origin's locations: the URL, its mirrors.
    let origin: OriginSource
    /// Engines at most: each opens its own connections to an origin (one HTTP/2 connection each),
    /// so their number is kept small on machines with many cores.
    static let maxEngines = 4
    /// Heads and body bytes as the transfers go (the window's growth, byte progress).
    public let meter = TransferMeter()

    /// The shared tier (`--remote-cache`), its lookups and the uploads to it, in a run with downloads.
    public let remote: RemoteTier?
    let tier: RemoteCacheLookup?
    public let uploads: RemoteUploads?

    /// What the transport made for the run, removed at `shutdown`.
    private let cleanup: @Sendable () -> Void

    /// One engine per core, at most `maxEngines`.
    public static var defaultEngineCount: Int {
        max(1, min(maxEngines, ProcessInfo.processInfo.activeProcessorCount))
    }

    /// Fails when the transport cannot start its engines (see `Transport.startEngines`). Without
    /// `network` (every request names a local file) no transport is used: one `LocalEngine`.
    /// `knownFolders`: where a local entry without a manifest of its own may be read from.
    public init(
        store: ContentStore, settings: FetchSettings, logger: Logger, network: Bool = true, knownFolders: [String] = [],
        engineCount: Int = Fetcher.defaultEngineCount
    ) throws(EngineStartFailure) {
        // `--jobs` caps an origin's connections across all engines: each engine keeps its own,
        // so each gets its share (and there are never more engines than jobs). `engineForNext`
        // sends each its share of the requests in flight.
        let count = network ? max(1, min(engineCount, settings.jobs)) : 1
        let shares = (0..<count).map { settings.jobs / count + ($0 < settings.jobs % count ? 1 : 0) }
        let started: EngineSet
        if !network {
            started = EngineSet(engines: [try LocalEngine()], cleanup: {})
        } else if let transport = settings.transport {
            started = try transport.startEngines(shares: shares, settings: settings)
        } else {
            throw .resources("no network transport was given to this run")
        }
        loads = Mutex(shares.map { EngineLoad(share: $0) })
        cleanup = started.cleanup
        engines = started.engines
        let remote = network ? settings.remoteCache.map { RemoteTier(settings: $0, logger: logger) } : nil
        let uploads = remote.flatMap { tier in
            tier.settings.readOnly
                ? nil
                : RemoteUploads(
                    tier: tier, cacheDirectory: store.root, engines: started.engines,
                    entryTimeout: settings.entryTimeout)
        }
        (self.remote, self.uploads) = (remote, uploads)
        let meter = meter
        tier = remote.map { RemoteCacheLookup(tier: $0, store: store, settings: settings, meter: meter, uploads: uploads) }
        sources = Self.sources(store: store, settings: settings, knownFolders: knownFolders)
        let limits = RateLimits(bytesPerSecond: settings.limitRate, requestsPerSecond: settings.maxRequestsPerSecond)
        origin = OriginSource(store: store, settings: settings, logger: logger, limits: limits, meter: meter)
    }

    /// The sources asked before the origin, in order. A new source is registered here.
    private static func sources(store: ContentStore, settings: FetchSettings, knownFolders: [String]) -> [any ContentSource] {
        [LocalFileSource(store: store, settings: settings, knownFolders: knownFolders)]
    }

    /// The sources that serve `request`, in order: its walk asks them before the origin's locations.
    func serving(_ request: FetchRequest) -> [FallbackWalk.Serving] {
        var serving: [FallbackWalk.Serving] = []
        for (number, source) in sources.enumerated() where source.serves(request) {
            serving.append(FallbackWalk.Serving(number: number, kind: source.kind))
        }
        return serving
    }

    /// Stops every engine (they close their connections at the same time) and waits for all.
    public func shutdown() async {
        await withDiscardingTaskGroup { group in
            for engine in engines { group.addTask { await engine.shutdown() } }
        }
        cleanup()
    }

    /// The engine for a new download, counted in its load until `finished(on:)`: the one with the
    /// most room left in its share of the connections, the caller's own engine on a tie (a slot
    /// freed on an engine is taken again there, with no hand-off between threads; a window that
    /// grows is spread over all of them).
    func engineForNext() -> any FetchEngine {
        let current = engines.firstIndex { $0.isCurrent } ?? 0
        let best = loads.withLock { loads -> Int in
            var best = current
            for (number, load) in loads.enumerated() where load.room > loads[best].room {
                best = number
            }
            loads[best].downloads += 1
            return best
        }
        return engines[best]
    }

    /// A download started with `engineForNext()` ended.
    func finished(on engine: any FetchEngine) {
        guard let number = engines.firstIndex(where: { $0 === engine }) else { return }
        loads.withLock { $0[number].downloads -= 1 }
    }

    /// An engine's downloads in flight and its share of an origin's connections.
    private struct EngineLoad {
        var downloads = 0
        let share: Int

        var room: Int { share - downloads }
    }
}
