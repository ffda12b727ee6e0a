import Synchronization
import WorkerFetch
import WorkerSupport

/// What the run's clock does at each tick, decided by a plain value (tested without timers):
/// while downloads run, progress is reported at its pace; the deadline is reached once, at its
/// time, downloads running or not (uploads to a tier end by it too). (The consumer's commit
/// cadence is its own wait: `DownloadQueue.batches(every:)`.)
struct RunClockSchedule: Equatable {
    /// What is due at a tick.
    struct Due: Equatable {
        var progress = false
        var deadline = false
    }

    /// Seconds between progress reports (nil: none).
    private(set) var progressEvery: Double?
    /// When the deadline falls (monotonic seconds; nil: none).
    let deadline: Double?
    private var nextProgress: Double
    private var downloading = true
    private var deadlineReached = false

    init(start: Double, progressEvery: Double?, deadline: Double?) {
        self.progressEvery = progressEvery
        self.deadline = deadline
        nextProgress = start + (progressEvery ?? 0)
    }

    /// What is due at `now`.
    mutating func due(at now: Double) -> Due {
        var due = Due()
        if downloading, progressEvery != nil, now >= nextProgress {
            due.progress = true
            nextProgress = now + (progressEvery ?? 0)
        }
        if let deadline, !deadlineReached, now >= deadline {
            deadlineReached = true
            due.deadline = true
        }
        return due
    }

    /// The downloads ended: only the deadline is left to watch.
    mutating func downloadsEnded() {
        downloading = false
    }

    /// When the next tick falls after one at `now`, or nil: nothing is left to do.
    func nextTick(after now: Double) -> Double? {
        let pending = deadlineReached ? nil : deadline
        guard downloading, progressEvery != nil else { return pending }
        return min(max(nextProgress, now), pending ?? .infinity)
    }
}

/// The run's one clock while it downloads and uploads: one timer at a time on a fetch engine
/// (its `schedule`), whose ticks report progress and reach the deadline as `RunClockSchedule`
/// says. Without progress shown and without a deadline it never ticks.
final class RunClock: Sendable {
    struct Actions: Sendable {
        let progress: @Sendable () -> Void
        let deadline: @Sendable () -> Void
    }

    private struct State {
        var schedule: RunClockSchedule
        var timer: Int?
        var stopped = false
    }

    private let state: Mutex<State>
    private let engine: any FetchEngine
    private let actions: Actions

    init(_ schedule: RunClockSchedule, on engine: any FetchEngine, actions: Actions) {
        state = Mutex(State(schedule: schedule))
        self.engine = engine
        self.actions = actions
    }

    /// Starts ticking from `now`.
    func start(now: Double = Monotonic.now()) {
        arm(after: now)
    }

    /// The downloads ended: no more progress; the deadline still falls.
    func downloadsEnded() {
        let timer = state.withLock { state -> Int? in
            state.schedule.downloadsEnded()
            defer { state.timer = nil }
            return state.timer
        }
        if let timer { engine.cancelTimer(timer) }
        arm(after: Monotonic.now())
    }

    /// No more ticks.
    func stop() {
        let timer = state.withLock { state -> Int? in
            state.stopped = true
            defer { state.timer = nil }
            return state.timer
        }
        if let timer { engine.cancelTimer(timer) }
    }

    private func arm(after now: Double) {
        state.withLock { state in
            guard !state.stopped, state.timer == nil, let next = state.schedule.nextTick(after: now) else { return }
            let id = engine.newTimerID()
            state.timer = id
            engine.schedule(id, in: max(0, next - now)) { [self] fired in
                guard fired else { return }
                fire(id)
            }
        }
    }

    private func fire(_ id: Int) {
        let now = Monotonic.now()
        let due = state.withLock { state -> RunClockSchedule.Due? in
            guard !state.stopped, state.timer == id else { return nil }
            state.timer = nil
            return state.schedule.due(at: now)
        }
        guard let due else { return }
        if due.deadline { actions.deadline() }
        if due.progress { actions.progress() }
        arm(after: now)
    }
}
