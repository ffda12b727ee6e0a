import WorkerSupport

/// A place a download's bytes can come from besides the origin's locations: a local file. The
/// shared tier is not one: a cache looked up before them (`RemoteCacheLookup`). A download's
/// walk (`FallbackWalk`) asks the sources that serve its request in order, then the origin's
/// locations: the first that delivers a verified body or fails ends it; one that has nothing
/// (`miss`) passes it on, and a miss is not a failure (no breaker event, no failure row). Adding a
/// source is a new conforming type and its place in `Fetcher.sources(…)`.
protocol ContentSource: Sendable {
    /// Which source this is (in each fetch result).
    var kind: SourceKind { get }

    /// Whether this source is asked for `request` at all.
    func serves(_ request: FetchRequest) -> Bool

    /// Delivers `request`'s content (verified against its hash, waiting in `tmp/`), says it has
    /// none, or fails. Starts on `lane.engine`'s thread; `done` is called once, from any thread.
    /// A stop of `lane.control` ends it as `cancelled`.
    func fetch(_ request: FetchRequest, lane: FetchLane, done: @escaping @Sendable (SourceOutcome) -> Void)
}

/// What one source answered for a request, and what it took.
struct SourceOutcome: Sendable {
    enum Answer: Sendable {
        case delivered(Delivery)
        /// The source does not have the content: the next source is asked.
        case miss
        case failed(FetchFailure)
    }

    let answer: Answer
    let attempts: Int
    /// Body bytes received over all attempts.
    let bytes: Int64
    /// A mirror that delivered it, as the manifest lists it.
    var servedBy: String?
    /// What it delivered was fetched with credentials.
    var isPrivate = false
    /// A mirror delivered because the entry's own URL failed.
    var failover: Failover?

    init(answer: Answer, attempts: Int, bytes: Int64) {
        self.answer = answer
        self.attempts = attempts
        self.bytes = bytes
    }

    /// A delivery or a failure.
    init(_ result: Result<Delivery, FetchFailure>, attempts: Int, bytes: Int64, servedBy: String? = nil, isPrivate: Bool = false) {
        self.servedBy = servedBy
        self.isPrivate = isPrivate
        switch result {
        case .success(let delivery): answer = .delivered(delivery)
        case .failure(let failure): answer = .failed(failure)
        }
        self.attempts = attempts
        self.bytes = bytes
    }
}

/// What a download runs with: where it runs (an engine's thread), what stops it, and the origin
/// gate its origin attempts report to (none outside a queue).
struct FetchLane: Sendable {
    let control: StopRequest
    let engine: any FetchEngine
    let gate: (any OriginGate)?
}
