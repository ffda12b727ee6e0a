import CCurl
import FoundationEssentials
import Glibc
import Logging
import Synchronization

/// Downloads bodies into the content store: streamed to `tmp/` while hashed, verified, then
/// renamed to their object name. A download asks its sources in order (`ContentSource`). A run's
/// downloads share a few `CurlEngine`s (one thread each, as many as the machine has cores, at most
/// `maxEngines`): a download and its retries and redirects stay on the engine it started on, each
/// engine keeps and multiplexes its own connections.
final class Fetcher: Sendable {
    let engines: [CurlEngine]
    /// Where bytes come from, asked in order (registered in `sources(…)`).
    let sources: SourceWalk
    /// Engines at most: each opens its own connections to an origin (one HTTP/2 connection each),
    /// so their number is kept small on machines with many cores.
    static let maxEngines = 4
    /// Heads and body bytes as the transfers go (the window's growth, byte progress).
    let meter = TransferMeter()

    /// A bundle made for this run, removed at `shutdown`.
    private let temporaryBundle: String?

    /// One engine per core, at most `maxEngines`.
    static var defaultEngineCount: Int {
        max(1, min(maxEngines, ProcessInfo.processInfo.activeProcessorCount))
    }

    /// Fails when an engine cannot start (see `CurlEngine.init`); the ones started are stopped.
    /// `knownFolders`: where a local entry without a manifest of its own may be read from.
    init(store: ContentStore, settings: FetchSettings, logger: Logger, knownFolders: [String] = [],
         engineCount: Int = Fetcher.defaultEngineCount) throws(CacheError) {
        Libcurl.prepare()
        let trusted = Self.trustedCertificates(settings.caCertificates)
        temporaryBundle = trusted?.temporary == true ? trusted?.path : nil
        // `--jobs` caps an origin's connections across all engines: each engine keeps its own,
        // so each gets its share (and there are never more engines than jobs). `engineForNext`
        // sends each its share of the requests in flight.
        let count = max(1, min(engineCount, settings.jobs))
        var started: [CurlEngine] = []
        for number in 0..<count {
            do {
                started.append(try CurlEngine(options: CurlEngine.Options(
                    connectTimeout: settings.connectTimeout, readTimeout: settings.readTimeout,
                    connectionsPerHost: settings.jobs / count + (number < settings.jobs % count ? 1 : 0),
                    streamsPerConnection: settings.maxStreams, trustedCertificates: trusted?.path)))
            } catch {
                for engine in started { Task { await engine.shutdown() } }
                if let temporary = trusted, temporary.temporary { unlink(temporary.path) }
                throw error
            }
        }
        engines = started
        sources = SourceWalk(Self.sources(store: store, settings: settings, logger: logger, knownFolders: knownFolders, meter: meter))
    }

    /// The sources, in the order a download asks them. A new source is registered here.
    private static func sources(store: ContentStore, settings: FetchSettings, logger: Logger, knownFolders: [String],
                                meter: TransferMeter) -> [any ContentSource] {
        let limits = RateLimits(bytesPerSecond: settings.limitRate, requestsPerSecond: settings.maxRequestsPerSecond)
        return [
            LocalFileSource(store: store, settings: settings, knownFolders: knownFolders),
            OriginSource(store: store, settings: settings, logger: logger, limits: limits, meter: meter),
        ]
    }

    /// `--ca-cert`'s authorities besides the system's, as one file for libcurl: the given file
    /// itself when libcurl also looks in the system's folder of certificates (Debian's does), else
    /// a temporary file of libcurl's default bundle followed by the given files. (A file, not a
    /// blob in memory: with CURLOPT_CAINFO_BLOB the HTTPS HTTP/1.1 10k took 4.7 s instead of
    /// about 2; libcurl caches a parsed store only for files.)
    private static func trustedCertificates(_ files: [String]) -> (path: String, temporary: Bool)? {
        guard !files.isEmpty else { return nil }
        if files.count == 1, worker_curl_default_ca_path() != nil {
            return (files[0], false)
        }
        var pem = Data()
        let system = worker_curl_default_ca_path() == nil ? worker_curl_default_ca_file().map { String(cString: $0) } : nil
        for file in (system.map { [$0] } ?? []) + files {
            guard let data = FileManager.default.contents(atPath: file) else { continue }
            pem += data
            pem.append(UInt8(ascii: "\n"))
        }
        var template = Array(((ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp") + "/worker-ca-XXXXXX").utf8CString)
        let fd = mkstemp(&template)
        guard fd >= 0 else { return (files[0], false) }
        let path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let written = pem.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        guard written == pem.count else {
            unlink(path)
            return (files[0], false)
        }
        return (path, true)
    }

    /// Stops every engine (they close their connections at the same time) and waits for all.
    func shutdown() async {
        await withDiscardingTaskGroup { group in
            for engine in engines { group.addTask { await engine.shutdown() } }
        }
        if let temporaryBundle { unlink(temporaryBundle) }
    }

    /// The engine for a new download, counted in its `downloads` until `finished(on:)`: the one
    /// with the most room left in its share of the connections, the caller's own engine on a tie
    /// (a slot freed on an engine is taken again there, with no hand-off between threads; a window
    /// that grows is spread over all of them).
    func engineForNext() -> CurlEngine {
        func room(_ engine: CurlEngine) -> Int {
            engine.connectionsPerHost - engine.downloads.load(ordering: .relaxed)
        }
        var best = engines.first { $0.isCurrent } ?? engines[0]
        var most = room(best)
        for engine in engines {
            let left = room(engine)
            if left > most { (best, most) = (engine, left) }
        }
        best.downloads.add(1, ordering: .relaxed)
        return best
    }

    /// A download started with `engineForNext()` ended.
    func finished(on engine: CurlEngine) {
        engine.downloads.subtract(1, ordering: .relaxed)
    }

    /// Downloads one request with its retries (for callers outside a queue: `verify --repair`).
    /// Cancelling the calling task cancels the download.
    func fetch(_ request: FetchRequest) async -> FetchResult {
        let control = FetchControl()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let engine = engineForNext()
                fetch(request, control: control, on: engine) { result in
                    self.finished(on: engine)
                    continuation.resume(returning: result)
                }
            }
        } onCancel: {
            control.stop()
        }
    }

    /// Downloads one request from the first of its sources that has it, entirely on `engine`'s
    /// thread as far as the source allows: the response is hashed and written where it arrives
    /// and the next step (a redirect hop, a retry timer, the next source) starts from there.
    /// `done` is called once; `control.stop()` ends the download as `cancelled`. With a `gate`,
    /// the origin's attempts are told to the origin breaker.
    func fetch(_ request: FetchRequest, control: FetchControl, gate: (any OriginGate)? = nil, on engine: CurlEngine,
               done: @escaping @Sendable (FetchResult) -> Void) {
        sources.fetch(request, lane: FetchLane(control: control, engine: engine, gate: gate), done: done)
    }

    /// A closed temporary file whose bytes matched the expected hash.
    struct VerifiedFile {
        let path: String
        let sha256: String
        let size: Int64
    }
}
