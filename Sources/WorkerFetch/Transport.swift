import Synchronization
import WorkerManifest
import WorkerStore

/// How downloads reach HTTP servers. The command line hands one in (`CurlTransport`, the only
/// code that links libcurl) with the fetch settings; a run that downloads asks it for its engines.
public protocol Transport: Sendable {
    /// Starts what a run with downloads will need (loading a library) on a thread of its own, so
    /// that it overlaps reading the manifests and the index; `startEngines` and `settle` wait for
    /// it. Never fails: a problem is `startEngines`'s to report, and only if the run downloads.
    func prepare()

    /// Returns once what `prepare` started is done (a process must not exit while a library is
    /// being loaded: the exit's destructors can crash in it).
    func settle()

    /// The engines for one run, started: one per entry of `shares`, each with that many
    /// connections per host. Fails (never traps) when the library cannot be loaded or is too old,
    /// or a thread cannot start; the engines already started are stopped.
    func startEngines(shares: [Int], settings: FetchSettings) throws(EngineStartFailure) -> EngineSet
}

/// A run's engines and what ends them.
public struct EngineSet: Sendable {
    public let engines: [any FetchEngine]
    /// Called once every engine has stopped (removes what the transport made for the run).
    public let cleanup: @Sendable () -> Void

    public init(engines: [any FetchEngine], cleanup: @escaping @Sendable () -> Void) {
        self.engines = engines
        self.cleanup = cleanup
    }
}

/// A thread that runs transfers, the timers around them and the work they start, one at a time:
/// bodies are hashed and written where they arrive, a download's retries and redirects stay on
/// its engine. Other threads reach it through `execute`, `schedule` and `start`.
public protocol FetchEngine: AnyObject, Sendable {
    /// Whether the caller runs on the engine's thread.
    var isCurrent: Bool { get }

    /// Runs `work` on the engine's thread, after what is queued before it.
    func execute(_ work: @escaping @Sendable () -> Void)

    /// An id for a timer to `schedule` later (registered for cancelling before it exists).
    func newTimerID() -> Int

    /// Runs `work(true)` on the engine's thread after `seconds`, or `work(false)` once the timer
    /// is cancelled (or the engine stops) first.
    func schedule(_ id: Int, in seconds: Double, _ work: @escaping @Sendable (Bool) -> Void)

    func cancelTimer(_ id: Int)

    /// A transfer for one exchange, made but not started (so that a stop can find it first).
    /// `done` is called once, on the engine's thread.
    func transfer(
        _ request: TransferRequest, handler: consuming sending ResponseHandler,
        done: @escaping @Sendable (ExchangeReply) -> Void
    ) -> any EngineTransfer

    /// Starts a transfer this engine made.
    func start(_ transfer: any EngineTransfer)

    /// Ends `transfer` with `failure` if it has not ended (before its start too).
    func abort(_ transfer: any EngineTransfer, _ failure: FetchFailure)

    /// Ends the engine once the transfers in flight are aborted; returns when its thread is done.
    func shutdown() async
}

extension FetchEngine {
    /// `schedule` with a new id, which is returned for `cancelTimer`.
    @discardableResult
    public func schedule(in seconds: Double, _ work: @escaping @Sendable (Bool) -> Void) -> Int {
        let id = newTimerID()
        schedule(id, in: seconds, work)
        return id
    }
}

/// One exchange made by an engine (its own type behind this name).
public protocol EngineTransfer: AnyObject, Sendable {}

/// What one exchange sends, and what watches it.
public struct TransferRequest: Sendable {
    public let url: String
    /// `Name: value` lines sent besides the User-Agent.
    public let headers: [String]
    /// When the exchange must have ended (monotonic seconds).
    public let deadline: Double
    /// `--limit-rate`'s budget, shared by the run's transfers.
    public let limits: RateLimits?
    public let meter: TransferMeter?
    /// The request's origin (its group's, redirects or not): the window a head grows.
    public let origin: Origin?
    public var method = TransferMethod.get
    /// Timeouts of this request instead of the engine's (a near server that must answer fast:
    /// the shared tier); nil keeps the engine's.
    public var timeouts: TransferTimeouts?
    /// AWS Signature Version 4 (libcurl's `CURLOPT_AWS_SIGV4`) with these credentials.
    public var signing: AWSSigning?
    /// The SSH login of an `sftp://` URL (libcurl's SFTP); the transport refuses sftp without one.
    public var ssh: SSHLogin?

    public init(
        url: String, headers: [String], deadline: Double, limits: RateLimits? = nil,
        meter: TransferMeter? = nil, origin: Origin? = nil
    ) {
        self.url = url
        self.headers = headers
        self.deadline = deadline
        self.limits = limits
        self.meter = meter
        self.origin = origin
    }
}

/// What one exchange asks of its server.
public enum TransferMethod: Sendable, Equatable {
    /// The body, into the `ResponseHandler`.
    case get
    /// The head only.
    case head
    /// Sends `size` bytes read from the open file `fd` (from its start) as the request body;
    /// the transfer closes it.
    case put(fd: Int32, size: Int64)
    /// WebDAV's MKCOL: makes the collection the URL names.
    case makeCollection
}

/// A request's own connect and read limits.
public struct TransferTimeouts: Sendable, Equatable {
    public var connect: Double
    /// Longest silence while waiting for or reading the response.
    public var read: Double
    /// The exchange ends when it moves fewer than `slowestRate` bytes a second for `read`
    /// seconds (a slow drip that is never silent).
    public var slowestRate: Int

    public init(connect: Double, read: Double, slowestRate: Int) {
        self.connect = connect
        self.read = read
        self.slowestRate = slowestRate
    }
}
