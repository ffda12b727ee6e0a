import Synchronization
import WorkerManifest
import WorkerSupport

/// Runs groups of downloads as its `RunCoordinator` decides: what happens (a response's head, an
/// attempt's end, the tier's answer, a group's end, the consumer asking) is sent to the
/// coordinator as an event (`send`), under one lock, on the thread where it happened, and what it
/// says is done once the lock is let go. A group is a list of plan items wanting the same
/// content, walked in order until one delivers (`GroupDownload`); with a shared tier, a group it
/// may have is looked up there first, and goes to its sources only when it missed. A group
/// starts on the fetch engine with the most room (a finished group's slot is refilled on its own
/// engine); finished groups reach the one consumer in batches (`DownloadQueue+Consumer.swift`).
public final class DownloadQueue: Sendable, DownloadRun {
    public typealias Finished = FinishedGroup

    /// The coordinator, and what carries out what it says: the consumer's continuation, the
    /// engine timer of its wait, and the walks a tier missed, waiting for their origin's turn.
    struct State {
        var coordinator: RunCoordinator
        /// The consumer waiting in `next(within:)`; there is one consumer.
        var waiter: Waiter?
        /// The engine's timer for the coordinator's wait (`RunCoordinator.Wait.token`).
        var timer: (token: Int, id: Int)?
        var afterTier: [Int: GroupDownload] = [:]
    }

    /// The waiting consumer's continuation, boxed: the standard library's continuation is opaque
    /// outside it, so an optional one is copied and destroyed through its type's metadata, on
    /// every event (a box is a reference).
    final class Waiter: Sendable {
        let continuation: CheckedContinuation<[Finished]?, Never>

        init(_ continuation: CheckedContinuation<[Finished]?, Never>) {
            self.continuation = continuation
        }
    }

    private let fetcher: Fetcher
    private let groups: [DownloadGroup]
    /// The request of a plan item (its route given when known: a group's first), made as the item starts.
    private let request: @Sendable (_ item: Int, _ route: Route?) -> FetchRequest
    private let control = StopRequest()
    let state: Mutex<State>
    /// The default `highWater`: a consumer committing a slow disk's batch holds at most a few
    /// batches' worth of results.
    static let highWater = 4096

    package init(
        fetcher: Fetcher, groups: [DownloadGroup], jobs: Int, streams: Int, breaker: OriginBreaker = OriginBreaker(),
        highWater: Int = DownloadQueue.highWater,
        request: @escaping @Sendable (_ item: Int, _ route: Route?) -> FetchRequest
    ) {
        self.fetcher = fetcher
        self.groups = groups
        self.request = request
        let origins = groups.map(\.origin)
        var alternates: [Int: [Origin]] = [:]
        for (number, group) in groups.enumerated() where !group.route.mirrors.isEmpty {
            alternates[number] = group.route.mirrorOrigins
        }
        let inTier = fetcher.tier == nil ? [] : groups.map(\.pinnedBySHA256)
        let schedule = DownloadSchedule(
            origins: origins, alternates: alternates, jobs: jobs, streams: streams, breaker: breaker,
            inTier: inTier, tierLookups: jobs)
        state = Mutex(State(coordinator: RunCoordinator(schedule: schedule, groups: groups, highWater: highWater)))
        // Held strongly until the queue's end (`next` returns nil) lets it go: a weak reference
        // would give the queue a side table, which sends every retain and release of it down
        // the runtime's slow path (a cold 10k sync: 0.8 % of its CPU in `doDecrementSlow` and
        // `incrementSlow`).
        fetcher.meter.onHead { head in self.headArrived(head) }
    }

    /// A response began: its origin's window grows as the answer starts, not when it ends.
    private func headArrived(_ head: TransferMeter.Head) {
        guard let origin = head.origin else { return }
        send(.headArrived(origin, status: head.status, multiplexed: head.multiplexed, closesConnections: head.closesConnection))
    }

    /// The end (`next` returns nil): no transfer is left to report a head, and the meter lets
    /// the queue go.
    func stopHearingHeads() {
        fetcher.meter.onHead(nil)
    }

    /// Whether every group has started (none waits for room or behind a probe).
    public var allStarted: Bool { state.withLock { $0.coordinator.schedule.allTaken } }

    private static func now() -> Double {
        Monotonic.now()
    }

    /// An engine for the queue's own timers.
    var engine: any FetchEngine { fetcher.engines[0] }

    /// Starts the first groups.
    public func start() {
        send(.start)
    }

    /// Starts no more groups and cancels the downloads in flight (they finish as `cancelled`).
    public func stop(because reason: String = "the run was cancelled") {
        send(.stop)
        control.stop(because: reason)
    }

    /// Why the queue was stopped (the message of what a stop cancelled).
    public var stopReason: String { control.stopReason }

    /// Why a queue stops itself when a body found the disk full.
    public static let noSpaceReason = "no space left on the device"

    /// The queue stopped itself because a body found the disk full: what it cancelled met a full
    /// disk, even when the body that found it is told after them.
    public var stoppedForSpace: Bool { control.isStopped && control.stopReason == Self.noSpaceReason }

    public var isStopped: Bool { control.isStopped }

    /// The groups never started (after a stop), once `next()` has returned nil.
    public var unstarted: [Int] {
        state.withLock { $0.coordinator.schedule.unstarted }
    }

    /// How each origin fared.
    public var originSummaries: [OriginBreaker.Summary] {
        state.withLock { $0.coordinator.schedule.breaker.summaries }
    }

    // MARK: - Origin gate

    func admitRetry(_ origin: Origin) -> RetryDecision {
        let now = Self.now()
        return state.withLock { $0.coordinator.admitRetry(origin, now: now) }
    }

    func record(_ origin: Origin, _ report: OriginReport) {
        send(.attemptEnded(origin, report))
    }

    func givenUp(_ origin: Origin) -> String? {
        state.withLock { $0.coordinator.schedule.breaker.givenUp(origin) }
    }

    func entryGaveUp(_ origin: Origin) {
        send(.entryGaveUp(origin))
    }

    // MARK: - Events in, effects out

    /// Tells the coordinator `event` under the lock, then does what it says once the lock is let
    /// go: the consumer answered, its timer armed or cancelled, groups launched. `waiter`: the
    /// consumer asking (`next`); `parking`: the walk of a group the tier missed, kept until the
    /// group's turn at its origin.
    func send(
        _ event: RunCoordinator.Event, waiter: Waiter? = nil,
        parking: (group: Int, download: GroupDownload)? = nil
    ) {
        let now = Self.now()
        var answer: (Waiter, [Finished]?)?
        var cancel: Int?
        var arm: (id: Int, token: Int, seconds: Double)?
        let launches = state.withLock { state -> [(RunCoordinator.Launch, GroupDownload?)] in
            if let waiter { state.waiter = waiter }
            if let parking { state.afterTier[parking.group] = parking.download }
            let effects = state.coordinator.handle(event, now: now)
            if let wait = effects.cancel, let timer = state.timer, timer.token == wait.token {
                cancel = timer.id
                state.timer = nil
            }
            if let (wait, seconds) = effects.arm {
                let id = engine.newTimerID()
                state.timer = (wait.token, id)
                arm = (id, wait.token, seconds)
            }
            if let given = effects.answer, let waiter = state.waiter {
                state.waiter = nil
                switch given {
                case .batch(let batch): answer = (waiter, batch)
                case .end: answer = (waiter, nil)
                }
            }
            guard !effects.launches.isEmpty else { return [] }
            return effects.launches.map { launch in
                guard case .run(let group, _) = launch, !state.afterTier.isEmpty else { return (launch, nil) }
                return (launch, state.afterTier.removeValue(forKey: group))
            }
        }
        if let cancel { engine.cancelTimer(cancel) }
        if let (waiter, batch) = answer {
            // The end: no transfer is left to report a head, and the meter lets the queue go.
            if batch == nil { stopHearingHeads() }
            waiter.continuation.resume(returning: batch)
        }
        if let arm {
            engine.schedule(arm.id, in: arm.seconds) { fired in
                guard fired else { return }
                self.send(.timerFell(token: arm.token))
            }
        }
        if !launches.isEmpty { perform(launches) }
    }

    private func perform(_ launches: [(RunCoordinator.Launch, GroupDownload?)]) {
        for (launch, begun) in launches {
            let engine = fetcher.engineForNext()
            switch launch {
            case .lookUp(let number):
                let download = groupDownload(number, tier: true, on: engine)
                engine.execute { download.start(on: engine) }
            case .run(let number, let delay):
                let download = begun ?? groupDownload(number, tier: false, on: engine)
                if delay > 0 {
                    // Started when the delay is over, or at once to end as cancelled after a stop.
                    control.wait(delay, on: engine) { _ in download.start(on: engine) }
                } else {
                    // Started after this turn of the engine has handled all its ready transfers:
                    // the origin gets the turn's requests together.
                    engine.execute { download.start(on: engine) }
                }
            }
        }
    }

    /// A group's walk (`FallbackWalk`): with `tier`, it asks the shared tier first; a miss hands
    /// the group back to the schedule, first in line for its origin, where it goes on.
    private func groupDownload(_ number: Int, tier: Bool, on engine: any FetchEngine) -> GroupDownload {
        let group = groups[number]
        return GroupDownload(
            items: group.items, route: group.route, tier: tier, fetcher: fetcher, control: control, queue: self,
            engine: engine, request: request
        ) { ended, engine in
            self.fetcher.finished(on: engine)
            switch ended {
            case .tierHit(let results): self.send(.lookedUp(group: number, hit: results))
            case .tierMissed(let download): self.send(.lookedUp(group: number, hit: nil), parking: (number, download))
            case .finished(let results): self.send(.finished(group: number, results: results))
            }
        }
    }
}
