import Synchronization
import WorkerManifest
import WorkerSupport

/// Performs one download group's `FallbackWalk` on a fetch engine: makes each member's request as
/// it is reached, asks the tier, a source or a location as the walk says, and tells the walk what
/// each answered. Its events come one at a time (each started by the one before it, on the
/// engine's thread or the starting one), so its lock is never waited for.
final class GroupDownload: Sendable {
    /// How a start on an engine ended.
    enum Ended: Sendable {
        /// The tier had the content: the group's one result.
        case tierHit([ItemResult])
        /// The tier did not: the group waits for its turn at its origin (`start` it again).
        case tierMissed(GroupDownload)
        /// The group ended: one result per member tried, in order.
        case finished([ItemResult])
    }

    private struct State: Sendable {
        var walk: FallbackWalk
        /// The member being tried, once its request is made.
        var request: FetchRequest?
        /// When it was opened (the origin's pace against the tier's).
        var opened = 0.0
        var engine: any FetchEngine
    }

    private let state: Mutex<State>
    private let fetcher: Fetcher
    /// The group's route, given to its first member's request.
    private let route: Route?
    private let request: @Sendable (_ item: Int, _ route: Route?) -> FetchRequest
    private let control: StopRequest
    /// The queue the group runs in: the origin gate its attempts report to, and what a full disk
    /// stops. None for a download of its own (`Fetcher.fetch`).
    private let queue: (any DownloadRun)?
    private let done: @Sendable (Ended, any FetchEngine) -> Void

    /// `tier`: the shared tier is asked first. `done` is called once for each `start` (from any
    /// thread: a local file is read off the engine), with the engine it was started on.
    init(
        items: GroupItems, route: Route?, tier: Bool, fetcher: Fetcher, control: StopRequest, queue: (any DownloadRun)?,
        engine: any FetchEngine, request: @escaping @Sendable (_ item: Int, _ route: Route?) -> FetchRequest,
        done: @escaping @Sendable (Ended, any FetchEngine) -> Void
    ) {
        state = Mutex(State(walk: FallbackWalk(items: items, tier: tier && fetcher.tier != nil), engine: engine))
        self.fetcher = fetcher
        self.route = route
        self.request = request
        self.control = control
        self.queue = queue
        self.done = done
    }

    /// Runs the walk's steps on `engine` until one waits for an answer, or the group ends (or
    /// waits for its origin after the tier missed).
    func start(on engine: any FetchEngine) {
        state.withLock { $0.engine = engine }
        advance()
    }

    private func advance() {
        while true {
            let (step, engine, current) = state.withLock { state in
                let step = state.walk.next(
                    givenUp: { self.queue?.givenUp($0) },
                    stopped: control.isStopped ? control.stopReason : nil)
                return (step, state.engine, state.request)
            }
            switch step {
            case .tier(let item):
                let made = request(item, route)
                state.withLock { $0.request = made }
                // (A walk asks the tier only when the fetcher has one.)
                guard let tier = fetcher.tier else { return done(.tierMissed(self), engine) }
                tier.lookUp(made, control: control, on: engine) { outcome in
                    if let hit = self.state.withLock({ $0.walk.tierAnswered(outcome) }) {
                        self.done(.tierHit(hit), engine)
                    } else {
                        self.done(.tierMissed(self), engine)
                    }
                }
                return
            case .open(let item, let first):
                // The first member's request was made for the tier already, if it was asked.
                let made = first ? current ?? request(item, route) : request(item, nil)
                let sources = fetcher.serving(made)
                let now = fetcher.tier == nil ? 0 : Monotonic.now()
                state.withLock { state in
                    state.request = made
                    state.opened = now
                    state.walk.opened(made, sources: sources)
                }
            case .source(let number, let member):
                let lane = FetchLane(control: control, engine: engine, gate: queue)
                fetcher.sources[number].fetch(member, lane: lane) { self.answered($0) }
                return
            case .location(let index, let retries, let member):
                let (sent, isPrivate) = member.sent(toLocation: index)
                let lane = FetchLane(control: control, engine: engine, gate: queue)
                fetcher.origin.download(sent, retries: retries, lane: lane) { finished in
                    let result = finished.result.mapError { OriginSource.named($0, at: member.location(at: index)) }
                    self.answered(SourceOutcome(result, attempts: finished.attempts, bytes: finished.bytes, isPrivate: isPrivate))
                }
                return
            case .finished(let results):
                tellTier(results, request: current)
                done(.finished(results), engine)
                return
            }
        }
    }

    private func answered(_ outcome: SourceOutcome) {
        // A body that found the disk full stops the downloads at once: every later one would too.
        if case .failed(let failure) = outcome.answer, failure.detail == .noSpace, !control.isStopped {
            queue?.stop(because: DownloadQueue.noSpaceReason)
        }
        state.withLock { $0.walk.answered(outcome) }
        advance()
    }

    /// What the origin delivered is told to the tier (its pace; what it takes once installed).
    private func tellTier(_ results: [ItemResult], request: FetchRequest?) {
        guard let tier = fetcher.tier, let request, let last = results.last, last.result.source == .origin,
            case .success(.body(let body)) = last.result.result
        else { return }
        let seconds = Monotonic.now() - state.withLock { $0.opened }
        tier.originDelivered(request, body, isPrivate: last.result.isPrivate, seconds: seconds)
    }
}

/// What a group's walk reports to in a queue: the origin gate its attempts tell, and the stop a
/// full disk asks for (`DownloadQueue`).
protocol DownloadRun: OriginGate {
    func stop(because reason: String)
}

extension Fetcher {
    /// Downloads one request with its retries (for callers outside a queue: `verify --repair`):
    /// a group of one, without the tier. Cancelling the calling task cancels the download.
    public func fetch(_ request: FetchRequest) async -> FetchResult {
        let control = StopRequest()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let engine = engineForNext()
                let download = GroupDownload(
                    items: GroupItems([0]), route: nil, tier: false, fetcher: self,
                    control: control, queue: nil, engine: engine, request: { _, _ in request }
                ) { ended, engine in
                    self.finished(on: engine)
                    // A walk without the tier ends with one result for its one member.
                    guard case .finished(let results) = ended, let last = results.last else {
                        return continuation.resume(
                            returning: FetchResult(
                                result: .failure(FetchFailure(.io, "no result")),
                                attempts: 0, bytesReceived: 0, source: nil))
                    }
                    continuation.resume(returning: last.result)
                }
                download.start(on: engine)
            }
        } onCancel: {
            control.stop()
        }
    }
}
