import NIOCore
import Synchronization

/// Runs groups of downloads, at most `jobs` at once. A group is a list of requests for the same
/// content, tried in order until one delivers. A finished group starts the next one from the
/// event loop it finished on, and finished groups reach the consumer in batches: a cold sync of
/// small files makes no thread hand-off per file (those hand-offs cost more CPU than hashing).
final class DownloadQueue: Sendable {
    struct Finished: Sendable {
        let group: Int
        /// One result per request tried, in order; the last one is the group's outcome.
        let results: [FetchResult]
    }

    private struct State {
        var next = 0
        var running = 0
        var stopped = false
        var ready: [Finished] = []
        var waiter: CheckedContinuation<[Finished]?, Never>?
        var flushScheduled = false
    }

    private let fetcher: Fetcher
    private let groups: [[FetchRequest]]
    private let jobs: Int
    private let control = FetchControl()
    private let state = Mutex(State())
    /// A waiting consumer is woken when this many groups are ready (or after `flushDelay`).
    private let wakeCount: Int
    private let flushDelay = TimeAmount.milliseconds(10)

    init(fetcher: Fetcher, groups: [[FetchRequest]], jobs: Int) {
        self.fetcher = fetcher
        self.groups = groups
        self.jobs = max(1, jobs)
        wakeCount = max(1, min(64, groups.count / 8))
    }

    /// Starts the first `jobs` groups.
    func start() {
        let first = state.withLock { state -> Range<Int> in
            let count = min(jobs, groups.count)
            state.next = count
            state.running = count
            return 0..<count
        }
        for number in first { run(number, request: 0, results: []) }
    }

    /// Starts no more groups and cancels the downloads in flight (they finish as `cancelled`).
    func stop() {
        state.withLock { $0.stopped = true }
        control.stop()
    }

    /// The groups never started (after a stop), once `next()` has returned nil.
    var unstarted: Range<Int> {
        state.withLock { $0.next..<groups.count }
    }

    /// The groups finished since the last call; nil once every started group has finished and
    /// no more will start. Waits while nothing is ready.
    func next() async -> [Finished]? {
        await withCheckedContinuation { (continuation: CheckedContinuation<[Finished]?, Never>) in
            let answer: [Finished]?? = state.withLock { state in
                if !state.ready.isEmpty {
                    defer { state.ready.removeAll(keepingCapacity: true) }
                    return .some(state.ready)
                }
                if state.running == 0 { return .some(nil) }
                state.waiter = continuation
                return .none
            }
            if let answer { continuation.resume(returning: answer) }
        }
    }

    private func run(_ number: Int, request index: Int, results: [FetchResult]) {
        let future = fetcher.fetch(groups[number][index], control: control)
        future.whenSuccess { result in
            var results = results
            results.append(result)
            if case .failure = result.result, index + 1 < self.groups[number].count, !self.control.isStopped {
                self.run(number, request: index + 1, results: results)
            } else {
                self.finish(Finished(group: number, results: results), on: future.eventLoop)
            }
        }
    }

    private func finish(_ finished: Finished, on loop: any EventLoop) {
        var start: Int?
        var wake: (CheckedContinuation<[Finished]?, Never>, [Finished])?
        var scheduleFlush = false
        state.withLock { state in
            state.running -= 1
            state.ready.append(finished)
            if !state.stopped, state.next < groups.count {
                start = state.next
                state.next += 1
                state.running += 1
            }
            guard let waiter = state.waiter else { return }
            if state.ready.count >= wakeCount || state.running == 0 {
                wake = (waiter, state.ready)
                state.waiter = nil
                state.ready = []
            } else if !state.flushScheduled {
                state.flushScheduled = true
                scheduleFlush = true
            }
        }
        if let (waiter, ready) = wake { waiter.resume(returning: ready) }
        if scheduleFlush {
            loop.scheduleTask(in: flushDelay) { self.flush() }
        }
        if let start {
            // Started after this turn of the event loop has handled all its ready connections:
            // the origin then gets the turn's requests together instead of a wake-up for each
            // (measured: nginx switched context 7,400 → 6,000 times per 10k files and the sync
            // took 0.70 s instead of 0.83 s of wall time on tmpfs).
            loop.execute { self.run(start, request: 0, results: []) }
        }
    }

    /// Hands what is ready to a waiting consumer (the timer behind `wakeCount`).
    private func flush() {
        let wake = state.withLock { state -> (CheckedContinuation<[Finished]?, Never>, [Finished])? in
            state.flushScheduled = false
            guard let waiter = state.waiter, !state.ready.isEmpty else { return nil }
            state.waiter = nil
            defer { state.ready = [] }
            return (waiter, state.ready)
        }
        if let (waiter, ready) = wake { waiter.resume(returning: ready) }
    }
}
