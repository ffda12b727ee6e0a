import WorkerManifest
import Synchronization
import WorkerSupport

/// Runs groups of downloads as `DownloadSchedule` decides. A group is a list of plan items wanting
/// the same content, tried in order until one delivers; with a shared tier, a group it may have
/// is looked up there first (`Fetcher.lookUp`), and goes to its sources only when it missed. A
/// group starts on the fetch engine with the fewest downloads (a finished group's slot is
/// refilled on its own engine); finished groups reach the one consumer in batches
/// (`DownloadQueue+Consumer.swift`).
package final class DownloadQueue: Sendable, DownloadRun {
    package struct Finished: Sendable {
        package let group: Int
        /// One result per item tried, in order; the last one is the group's outcome.
        package let results: [ItemResult]
    }

    package struct State {
        var schedule: DownloadSchedule
        var ready: [Finished] = []
        /// The consumer waiting in `next(within:)`; there is one consumer.
        var waiter: CheckedContinuation<[Finished]?, Never>?
        /// The waiting consumer's timer.
        var wait: Wait?
        /// Groups the tier missed, waiting for their turn at their origin.
        var afterTier: [Int: GroupDownload] = [:]
    }

    /// What the schedule's steps ask the queue to launch.
    enum Launch {
        /// At its origin; `download`: the group's walk, begun at the tier.
        case run(group: Int, delay: Double, download: GroupDownload?)
        case lookUp(group: Int)
    }

    private let fetcher: Fetcher
    private let groups: [DownloadGroup]
    /// The request of a plan item (its origin given when known), made as the item starts.
    private let request: @Sendable (_ item: Int, _ origin: Origin?) -> FetchRequest
    private let control = StopRequest()
    let state: Mutex<State>
    /// A waiting consumer is woken when this many groups are ready (or after `flushDelay`).
    let wakeCount: Int
    /// Groups ready and not taken by the consumer at which no new group starts (back-pressure).
    let highWater: Int
    static let flushDelay = 0.010
    /// The default `highWater`: a consumer committing a slow disk's batch holds at most a few
    /// batches' worth of results.
    package static let highWater = 4096

    package init(fetcher: Fetcher, groups: [DownloadGroup], jobs: Int, streams: Int, breaker: OriginBreaker = OriginBreaker(),
                 highWater: Int = DownloadQueue.highWater,
                 request: @escaping @Sendable (_ item: Int, _ origin: Origin?) -> FetchRequest) {
        self.fetcher = fetcher
        self.groups = groups
        self.request = request
        wakeCount = max(1, min(64, groups.count / 8))
        self.highWater = highWater
        let origins = groups.map(\.origin)
        var alternates: [Int: [Origin]] = [:]
        for (number, group) in groups.enumerated() where !group.mirrorOrigins.isEmpty {
            alternates[number] = group.mirrorOrigins
        }
        let inTier = fetcher.tier == nil ? [] : groups.map(\.pinnedBySHA256)
        state = Mutex(State(schedule: DownloadSchedule(origins: origins, alternates: alternates, jobs: jobs, streams: streams,
                                                       breaker: breaker, inTier: inTier, tierLookups: jobs)))
        // Held strongly until the queue's end (`next` returns nil) lets it go: a weak reference
        // would give the queue a side table, which sends every retain and release of it down
        // the runtime's slow path (a cold 10k sync: 0.8 % of its CPU in `doDecrementSlow` and
        // `incrementSlow`).
        fetcher.meter.onHead { head in self.headArrived(head) }
    }

    /// A response began: its origin's window grows as the answer starts, not when it ends.
    /// (Most heads find the window at its cap: then nothing but the lock is paid.)
    private func headArrived(_ head: TransferMeter.Head) {
        guard let origin = head.origin else { return }
        let now = Self.now()
        var handOver = HandOver()
        let starts = state.withLock { state -> [Launch] in
            let steps = state.schedule.headArrived(origin, status: head.status, multiplexed: head.multiplexed,
                                                   closesConnections: head.closesConnection, now: now)
            guard !steps.isEmpty else { return [] }
            let starts = apply(steps, to: &state)
            handOver = handOverIfDue(&state)
            return starts
        }
        handOver.run(self)
        perform(starts)
    }

    /// The end (`next` returns nil): no transfer is left to report a head, and the meter lets
    /// the queue go.
    func stopHearingHeads() {
        fetcher.meter.onHead(nil)
    }

    /// Whether every group has started (none waits for room or behind a probe).
    package var allStarted: Bool { state.withLock { $0.schedule.allTaken } }

    private static func now() -> Double {
        Monotonic.now()
    }

    /// An engine for the queue's own timers.
    var engine: any FetchEngine { fetcher.engines[0] }

    /// Starts the first groups.
    package func start() {
        let now = Self.now()
        changed { $0.take(now: now) }
    }

    /// Starts no more groups and cancels the downloads in flight (they finish as `cancelled`).
    package func stop(because reason: String = "the run was cancelled") {
        state.withLock { $0.schedule.stop() }
        control.stop(because: reason)
    }

    /// Why the queue was stopped (the message of what a stop cancelled).
    package var stopReason: String { control.stopReason }

    package var isStopped: Bool { control.isStopped }

    /// The groups never started (after a stop), once `next()` has returned nil.
    package var unstarted: [Int] {
        state.withLock { $0.schedule.unstarted }
    }

    /// How each origin fared.
    package var originSummaries: [OriginBreaker.Summary] {
        state.withLock { $0.schedule.breaker.summaries }
    }

    // MARK: - Origin gate

    func admitRetry(_ origin: Origin) -> RetryDecision {
        let now = Self.now()
        return state.withLock { $0.schedule.admitRetry(origin, now: now) }
    }

    func record(_ origin: Origin, _ report: OriginReport) {
        let now = Self.now()
        changed { $0.record(origin, report, now: now) }
    }

    func givenUp(_ origin: Origin) -> String? {
        state.withLock { $0.schedule.breaker.givenUp(origin) }
    }

    func entryGaveUp(_ origin: Origin) {
        let now = Self.now()
        changed { $0.entryGaveUp(origin, now: now) }
    }

    // MARK: - Starting and finishing groups

    /// Changes the schedule under the lock; refused groups go straight to `ready` and reach the
    /// consumer as finished ones do, and the groups to start are started.
    private func changed(_ body: (inout DownloadSchedule) -> [DownloadSchedule.Step]) {
        var handOver = HandOver()
        let starts = state.withLock { state in
            let starts = apply(body(&state.schedule), to: &state)
            handOver = handOverIfDue(&state)
            return starts
        }
        handOver.run(self)
        perform(starts)
    }

    /// The steps' refusals as finished groups; the rest, to launch. Call under the lock.
    func apply(_ steps: [DownloadSchedule.Step], to state: inout State) -> [Launch] {
        var starts: [Launch] = []
        for step in steps {
            switch step {
            case .start(let group, let delay):
                let begun = state.afterTier.isEmpty ? nil : state.afterTier.removeValue(forKey: group)
                starts.append(.run(group: group, delay: delay, download: begun))
            case .lookUp(let group):
                starts.append(.lookUp(group: group))
            case .refuse(let group, let message):
                let result = FetchResult(result: .failure(FetchFailure(.connection, message)), attempts: 0, bytesReceived: 0,
                                         source: nil)
                state.ready.append(Finished(group: group, results: groups[group].items.map { ItemResult(item: $0, result: result) }))
            }
        }
        return starts
    }

    func perform(_ starts: [Launch]) {
        for launch in starts {
            let engine = fetcher.engineForNext()
            switch launch {
            case .lookUp(let number):
                let download = groupDownload(number, tier: true, on: engine)
                engine.execute { download.start(on: engine) }
            case .run(let number, let delay, let begun):
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
        return GroupDownload(items: group.items, origin: group.origin, tier: tier, fetcher: fetcher, control: control, queue: self,
                             engine: engine, request: request) { ended, engine in
            self.fetcher.finished(on: engine)
            switch ended {
            case .tierHit(let results): self.lookedUp(number, hit: Finished(group: number, results: results), waiting: nil)
            case .tierMissed(let download): self.lookedUp(number, hit: nil, waiting: download)
            case .finished(let results): self.finish(Finished(group: number, results: results))
            }
        }
    }

    /// The tier answered a group's lookup: a hit finishes it; a miss waits for its origin's turn.
    private func lookedUp(_ number: Int, hit: Finished?, waiting download: GroupDownload?) {
        let now = Self.now()
        var handOver = HandOver()
        let starts = state.withLock { state in
            if let hit { readied(hit, &state) }
            if let download { state.afterTier[number] = download }
            let starts = apply(state.schedule.lookedUp(number, hit: hit != nil, now: now), to: &state)
            handOver = handOverIfDue(&state)
            return starts
        }
        handOver.run(self)
        perform(starts)
    }

    /// A finished group for the consumer; at `highWater` not taken, no new group starts until
    /// it takes them (`next`). Call under the lock.
    private func readied(_ finished: Finished, _ state: inout State) {
        state.ready.append(finished)
        if state.ready.count >= highWater { state.schedule.heldBack = true }
    }

    /// A group ended: its slot goes to the next group.
    private func finish(_ finished: Finished) {
        let now = Self.now()
        var handOver = HandOver()
        let starts = state.withLock { state in
            readied(finished, &state)
            let starts = apply(state.schedule.finished(finished.group, now: now), to: &state)
            handOver = handOverIfDue(&state)
            return starts
        }
        handOver.run(self)
        perform(starts)
    }
}
