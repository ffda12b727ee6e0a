/// Which download groups run when, as a plain value: at most `jobs` at once, in list order, each
/// origin's health (the breaker) deciding whether a group starts, waits out a pause, is parked
/// behind a probe or fails at once. No clock, no I/O, no locks: `DownloadQueue` holds it under
/// its lock and passes the time, so tests drive it with numbers.
struct DownloadSchedule: Sendable {
    /// What the queue is to do with a group.
    enum Step: Sendable, Equatable {
        /// Run it, after `delay` seconds (an origin's Retry-After pause).
        case start(group: Int, delay: Double)
        /// Fail it at once without a request: its origin was given up.
        case refuse(group: Int, message: String)
    }

    let jobs: Int
    /// Each group's origin; nil for local files, which no origin rule concerns.
    private let origins: [String?]
    private(set) var breaker: OriginBreaker
    /// Groups started and not finished yet.
    private(set) var running = 0
    private(set) var isStopped = false
    /// The next group of the list never taken.
    private var next = 0
    /// Groups waiting for a probe of their origin, by origin.
    private var parked: [String: [Int]] = [:]
    /// Groups released from `parked`, taken before new ones; `releasedStart` is the first not taken.
    private var released: [Int] = []
    private var releasedStart = 0

    init(origins: [String?], jobs: Int, breaker: OriginBreaker = OriginBreaker()) {
        self.origins = origins
        self.jobs = max(1, jobs)
        self.breaker = breaker
    }

    /// Takes groups while there is room: each starts, waits, is parked, or is refused.
    mutating func take(now: Double) -> [Step] {
        var steps: [Step] = []
        while !isStopped, running < jobs, let group = takeNext() {
            guard let origin = origins[group] else {
                running += 1
                steps.append(.start(group: group, delay: 0))
                continue
            }
            switch breaker.admitEntry(origin, now: now) {
            case .go, .probe:
                running += 1
                steps.append(.start(group: group, delay: 0))
            case .wait(let until):
                running += 1
                steps.append(.start(group: group, delay: max(0, until - now)))
            case .park:
                parked[origin, default: []].append(group)
            case .refuse(let message):
                steps.append(.refuse(group: group, message: message))
            }
        }
        return steps
    }

    private mutating func takeNext() -> Int? {
        if releasedStart < released.count {
            defer { releasedStart += 1 }
            return released[releasedStart]
        }
        guard next < origins.count else { return nil }
        defer { next += 1 }
        return next
    }

    /// A started group ended (delivered or failed): its slot goes to the next.
    mutating func finished(now: Double) -> [Step] {
        running -= 1
        return take(now: now)
    }

    /// An attempt's outcome, told to the origin's breaker. A probe that ended releases the
    /// groups parked behind it.
    mutating func record(_ origin: String, _ outcome: OriginBreaker.Outcome, now: Double) -> [Step] {
        release(breaker.record(origin, outcome, now: now), now: now)
    }

    /// An entry of `origin` gave up after its retries.
    mutating func entryGaveUp(_ origin: String, now: Double) -> [Step] {
        release(breaker.entryGaveUp(origin), now: now)
    }

    /// Whether a failed attempt of `origin` may be tried again, and when.
    mutating func admitRetry(_ origin: String, now: Double) -> RetryDecision {
        switch breaker.admitRetry(origin, now: now) {
        case .refuse: .giveUp
        case .wait(let until): .wait(seconds: max(0, until - now))
        case .go, .probe, .park: .go
        }
    }

    private mutating func release(_ events: [OriginBreaker.Event], now: Double) -> [Step] {
        var any = false
        for case .released(let origin) in events {
            released += parked.removeValue(forKey: origin) ?? []
            any = true
        }
        return any ? take(now: now) : []
    }

    /// Starts nothing more.
    mutating func stop() {
        isStopped = true
    }

    /// The groups never started: after a stop, or parked when the run ended.
    var unstarted: [Int] {
        Array(next..<origins.count) + released[releasedStart...] + parked.values.joined()
    }
}
