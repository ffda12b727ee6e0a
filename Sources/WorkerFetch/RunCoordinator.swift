import WorkerManifest

/// A run's downloads coordinated as a plain value: the schedule (which group starts when, each
/// origin's window and health, the tier's window), the groups finished and not yet taken by the
/// run's one consumer, and the consumer's wait. What happens — a response's head, an attempt's
/// end, a tier's answer, a group's end, the consumer asking, its timer falling, a stop — comes in
/// as an `Event`; what to do comes out as `Effects`: groups to launch, the consumer to answer,
/// its timer to arm or cancel. No clock, no I/O, no locks: `DownloadQueue` holds it under its
/// lock, passes the time, and does what it says once the lock is let go; tests drive it with
/// events and numbers.
struct RunCoordinator {
    enum Event {
        /// The first groups start.
        case start
        case headArrived(Origin, status: Int, multiplexed: Bool, closesConnections: Bool)
        case attemptEnded(Origin, OriginReport)
        /// An entry of the origin failed for good on an origin problem.
        case entryGaveUp(Origin)
        /// The tier answered a group's lookup: a hit with the group's results; a miss (nil) puts
        /// the group first in line for its origin.
        case lookedUp(group: Int, hit: [ItemResult]?)
        /// A group ended: one result per member tried.
        case finished(group: Int, results: [ItemResult])
        /// The consumer asks for what finished, and waits at most `within` seconds.
        case consumerAsks(within: Double)
        /// The consumer's timer fell (`token`: the wait it was armed for).
        case timerFell(token: Int)
        /// No group starts any more.
        case stop
    }

    /// A group to start: at its origin after `delay` seconds, or at the tier.
    enum Launch: Equatable {
        case run(group: Int, delay: Double)
        case lookUp(group: Int)
    }

    /// What the consumer is told: a batch of finished groups (maybe none, when its timer fell),
    /// or that the run's downloads are over.
    enum Answer {
        case batch([FinishedGroup])
        case end
    }

    /// The consumer waiting: the token of its timer, and whether that falls within `flushDelay`.
    struct Wait: Equatable {
        let token: Int
        let short: Bool
    }

    struct Effects {
        var launches: [Launch] = []
        var answer: Answer?
        /// A timer to arm for the waiting consumer, falling in `seconds`.
        var arm: (wait: Wait, seconds: Double)?
        /// A timer the consumer no longer needs.
        var cancel: Wait?
    }

    private(set) var schedule: DownloadSchedule
    private let groups: [DownloadGroup]
    private(set) var ready: [FinishedGroup] = []
    private(set) var waiting: Wait?
    private var tokens = 0
    /// The consumer is answered once this many groups are ready, or nothing more runs; fewer
    /// wait for its timer, made to fall within `flushDelay`. (Answering it for every finished
    /// group would cost a thread hand-off per file.)
    let wakeCount: Int
    /// Groups ready and not taken at which no new group starts (back-pressure).
    let highWater: Int
    static let flushDelay = 0.010

    init(schedule: DownloadSchedule, groups: [DownloadGroup], highWater: Int) {
        self.schedule = schedule
        self.groups = groups
        self.highWater = highWater
        wakeCount = max(1, min(64, groups.count / 8))
    }

    mutating func handle(_ event: Event, now: Double) -> Effects {
        var effects = Effects()
        switch event {
        case .start:
            launch(schedule.take(now: now), &effects)
        case .headArrived(let origin, let status, let multiplexed, let closes):
            launch(
                schedule.headArrived(origin, status: status, multiplexed: multiplexed, closesConnections: closes, now: now),
                &effects)
        case .attemptEnded(let origin, let report):
            launch(schedule.record(origin, report, now: now), &effects)
        case .entryGaveUp(let origin):
            launch(schedule.entryGaveUp(origin, now: now), &effects)
        case .lookedUp(let group, let hit):
            if let hit { readied(FinishedGroup(group: group, results: hit)) }
            launch(schedule.lookedUp(group, hit: hit != nil, now: now), &effects)
        case .finished(let group, let results):
            readied(FinishedGroup(group: group, results: results))
            launch(schedule.finished(group, now: now), &effects)
        case .consumerAsks(let seconds):
            precondition(waiting == nil, "RunCoordinator: one consumer")
            // What it takes lets the groups held back start again.
            if schedule.heldBack {
                schedule.heldBack = false
                launch(schedule.take(now: now), &effects)
            }
            if !ready.isEmpty, ready.count >= wakeCount || schedule.running == 0 {
                effects.answer = .batch(takeReady())
            } else if ready.isEmpty, schedule.running == 0 {
                effects.answer = .end
            } else {
                let wait = newWait(short: !ready.isEmpty)
                waiting = wait
                effects.arm = (wait, wait.short ? Self.flushDelay : seconds)
            }
            return effects
        case .timerFell(let token):
            // A timer replaced or no longer needed meanwhile falls to no effect.
            guard waiting?.token == token else { return effects }
            waiting = nil
            effects.answer = .batch(takeReady())
            return effects
        case .stop:
            schedule.stop()
        }
        handOverIfDue(&effects)
        return effects
    }

    /// A question, not an event: whether a failed attempt of `origin` may be tried again, and when.
    mutating func admitRetry(_ origin: Origin, now: Double) -> RetryDecision {
        schedule.admitRetry(origin, now: now)
    }

    /// The schedule's steps: refused groups are finished at once (ready as finished ones are);
    /// the others are launched.
    private mutating func launch(_ steps: [DownloadSchedule.Step], _ effects: inout Effects) {
        for step in steps {
            switch step {
            case .start(let group, let delay):
                effects.launches.append(.run(group: group, delay: delay))
            case .lookUp(let group):
                effects.launches.append(.lookUp(group: group))
            case .refuse(let group, let message):
                let result = FetchResult(
                    result: .failure(FetchFailure(.connection, message)), attempts: 0, bytesReceived: 0,
                    source: nil)
                readied(
                    FinishedGroup(
                        group: group,
                        results: groups[group].items.map { ItemResult(item: $0, result: result, origin: groups[group].origin) }))
            }
        }
    }

    /// A finished group for the consumer; at `highWater` not taken, no new group starts until
    /// it asks again.
    private mutating func readied(_ finished: FinishedGroup) {
        ready.append(finished)
        if ready.count >= highWater { schedule.heldBack = true }
    }

    /// The one rule for answering a waiting consumer after a change: once `wakeCount` groups are
    /// ready, or nothing more runs; fewer wait for its timer, made to fall within `flushDelay`.
    private mutating func handOverIfDue(_ effects: inout Effects) {
        guard let wait = waiting, !ready.isEmpty else { return }
        if ready.count >= wakeCount || schedule.running == 0 {
            waiting = nil
            effects.cancel = wait
            effects.answer = .batch(takeReady())
        } else if !wait.short {
            let shorter = newWait(short: true)
            waiting = shorter
            effects.cancel = wait
            effects.arm = (shorter, Self.flushDelay)
        }
    }

    private mutating func takeReady() -> [FinishedGroup] {
        defer { ready = [] }
        return ready
    }

    private mutating func newWait(short: Bool) -> Wait {
        tokens += 1
        return Wait(token: tokens, short: short)
    }
}
