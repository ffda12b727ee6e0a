import NIOCore
import Synchronization

/// Runs groups of downloads, at most `jobs` at once. A group is a list of requests for the same
/// content, tried in order until one delivers. A finished group starts the next one from the
/// event loop it finished on, and finished groups reach the consumer in batches: a cold sync of
/// small files makes no thread hand-off per file (those hand-offs cost more CPU than hashing).
final class DownloadQueue: Sendable, OriginGate {
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
        var breaker: OriginBreaker
        /// Groups waiting for a probe of their origin, by origin.
        var parked: [String: [Int]] = [:]
        /// Groups released from `parked`, started before the next new one.
        var released: [Int] = []
    }

    /// A group to run, after `delay` seconds (an origin's Retry-After pause).
    private struct Start {
        let group: Int
        let delay: Double
    }

    /// A consumer to wake and what to hand it.
    private typealias Wake = (CheckedContinuation<[Finished]?, Never>, [Finished])

    private let fetcher: Fetcher
    private let groups: [[FetchRequest]]
    private let jobs: Int
    private let control = FetchControl()
    private let state: Mutex<State>
    /// A waiting consumer is woken when this many groups are ready (or after `flushDelay`).
    private let wakeCount: Int
    private let flushDelay = TimeAmount.milliseconds(10)
    /// Each group's origin (its first request's), nil for local files.
    private let origins: [String?]

    init(fetcher: Fetcher, groups: [[FetchRequest]], jobs: Int, breaker: OriginBreaker = OriginBreaker()) {
        self.fetcher = fetcher
        self.groups = groups
        self.jobs = max(1, jobs)
        wakeCount = max(1, min(64, groups.count / 8))
        origins = groups.map { requests in
            requests.first.flatMap { $0.url.hasPrefix("file://") ? nil : Fetcher.origin(of: $0.url) }
        }
        state = Mutex(State(breaker: breaker))
    }

    /// Starts the first `jobs` groups.
    func start() {
        changed { state in takeStarts(&state) }
    }

    /// Runs `body` under the lock, then starts what it returned and wakes a consumer that waits
    /// while groups are ready (refused ones included).
    private func changed(_ body: (inout State) -> [Start]) {
        let (starts, wake) = state.withLock { state -> ([Start], Wake?) in
            let starts = body(&state)
            guard let waiter = state.waiter, !state.ready.isEmpty else { return (starts, nil) }
            state.waiter = nil
            defer { state.ready = [] }
            return (starts, (waiter, state.ready))
        }
        if let (waiter, ready) = wake { waiter.resume(returning: ready) }
        perform(starts, on: fetcher.eventLoop)
    }

    /// Starts no more groups and cancels the downloads in flight (they finish as `cancelled`).
    func stop(because reason: String = "the run was cancelled") {
        state.withLock { $0.stopped = true }
        control.stop(because: reason)
    }

    /// The groups never started (after a stop), once `next()` has returned nil.
    var unstarted: [Int] {
        state.withLock { state in
            Array(state.next..<groups.count) + state.released + state.parked.values.flatMap { $0 }
        }
    }

    /// How each origin fared.
    var originSummaries: [OriginBreaker.Summary] {
        state.withLock { $0.breaker.summaries }
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

    // MARK: - Origin gate

    private static func now() -> Double {
        Double(NIODeadline.now().uptimeNanoseconds) / 1e9
    }

    func admitRetry(_ origin: String) -> RetryDecision {
        let now = Self.now()
        switch state.withLock({ $0.breaker.admitRetry(origin, now: now) }) {
        case .refuse: return .giveUp
        case .wait(let until): return .wait(seconds: max(0, until - now))
        case .go, .probe, .park: return .go
        }
    }

    func record(_ origin: String, _ outcome: OriginBreaker.Outcome) {
        let now = Self.now()
        changed { state in release(state.breaker.record(origin, outcome, now: now), &state) }
    }

    func entryGaveUp(_ origin: String) {
        changed { state in release(state.breaker.entryGaveUp(origin), &state) }
    }

    /// Moves the groups parked behind a finished probe back to the list, and starts what fits.
    private func release(_ events: [OriginBreaker.Event], _ state: inout State) -> [Start] {
        var any = false
        for case .released(let origin) in events {
            state.released += state.parked.removeValue(forKey: origin) ?? []
            any = true
        }
        return any ? takeStarts(&state) : []
    }

    // MARK: - Starting and finishing groups

    /// Takes groups off the list while there is room: each is run, or failed at once (straight
    /// to `ready`) when its origin is given up; a group whose origin is being probed is parked.
    /// Call under the lock.
    private func takeStarts(_ state: inout State) -> [Start] {
        var starts: [Start] = []
        let now = Self.now()
        while !state.stopped, state.running < jobs {
            let number: Int
            if !state.released.isEmpty {
                number = state.released.removeFirst()
            } else if state.next < groups.count {
                number = state.next
                state.next += 1
            } else {
                break
            }
            guard let origin = origins[number] else {
                state.running += 1
                starts.append(Start(group: number, delay: 0))
                continue
            }
            switch state.breaker.admitEntry(origin, now: now) {
            case .go, .probe:
                state.running += 1
                starts.append(Start(group: number, delay: 0))
            case .wait(let until):
                state.running += 1
                starts.append(Start(group: number, delay: until - now))
            case .park:
                state.parked[origin, default: []].append(number)
            case .refuse(let message):
                let result = FetchResult(result: .failure(FetchFailure(.connection, message)), attempts: 0, bytesReceived: 0)
                state.ready.append(Finished(group: number, results: groups[number].map { _ in result }))
            }
        }
        return starts
    }

    private func perform(_ starts: [Start], on loop: any EventLoop) {
        for start in starts {
            let number = start.group
            if start.delay > 0 {
                let wait = loop.scheduleTask(in: .nanoseconds(Int64(start.delay * 1e9))) {}
                let token = control.register(.timer(wait))
                wait.futureResult.whenComplete { _ in
                    self.control.unregister(token)
                    self.run(number, request: 0, results: [])
                }
            } else {
                // Started after this turn of the event loop has handled all its ready
                // connections: the origin gets the turn's requests together (fewer wake-ups).
                loop.execute { self.run(number, request: 0, results: []) }
            }
        }
    }

    private func run(_ number: Int, request index: Int, results: [FetchResult]) {
        let future = fetcher.fetch(groups[number][index], control: control, gate: self)
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
        var wake: (CheckedContinuation<[Finished]?, Never>, [Finished])?
        var scheduleFlush = false
        let starts = state.withLock { state -> [Start] in
            state.running -= 1
            state.ready.append(finished)
            let starts = takeStarts(&state)
            guard let waiter = state.waiter else { return starts }
            if state.ready.count >= wakeCount || state.running == 0 {
                wake = (waiter, state.ready)
                state.waiter = nil
                state.ready = []
            } else if !state.flushScheduled {
                state.flushScheduled = true
                scheduleFlush = true
            }
            return starts
        }
        if let (waiter, ready) = wake { waiter.resume(returning: ready) }
        if scheduleFlush {
            loop.scheduleTask(in: flushDelay) { self.flush() }
        }
        perform(starts, on: loop)
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
