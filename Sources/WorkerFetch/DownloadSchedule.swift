import WorkerManifest

/// Which download groups run when, as a plain value: in list order, each origin with as many
/// requests in flight as its `OriginWindow` allows (local files: `localJobs`), and each origin's
/// health (the breaker) deciding whether a group starts, waits out a pause, is parked behind a
/// probe or fails at once. A group the shared tier may have is looked up there first, with an
/// admission of its own, just before its turn at the origin: a hit ends it, a miss puts it first
/// in line for its origin. The tier's answers never touch an origin's window; they size the
/// tier's own (`TierWindow`). No clock, no I/O, no locks: `DownloadQueue` holds it under its lock and passes the
/// time, so tests drive it with numbers.
struct DownloadSchedule: Sendable {
    /// What the queue is to do with a group.
    enum Step: Sendable, Equatable {
        /// Run it, after `delay` seconds (an origin's Retry-After pause).
        case start(group: Int, delay: Double)
        /// Fail it at once without a request: its origin was given up.
        case refuse(group: Int, message: String)
        /// Ask the shared tier for it (`lookedUp` says what it answered).
        case lookUp(group: Int)
    }

    /// HTTP/1.1 connections per origin.
    let jobs: Int
    /// Local files read at once: `jobs`, up to `localFilesAtOnce` (each read blocks a thread, and
    /// the disk, not a server far away, is what they wait for).
    let localJobs: Int
    static let localFilesAtOnce = 16
    /// Requests in flight on one HTTP/2 origin.
    let streams: Int
    /// Each group's origin; nil for local files, which no origin rule concerns.
    private let origins: [Origin?]
    /// The origins of the mirrors of groups that have some, in order: a group whose origin was
    /// given up starts on the first mirror origin that was not, in that origin's window.
    private let alternates: [Int: [Origin]]
    /// Groups running in a mirror origin's window, and which.
    private var heldAt: [Int: Origin] = [:]
    private(set) var windows: [Origin: OriginWindow] = [:]
    /// Local files being read.
    private var localRunning = 0
    private(set) var breaker: OriginBreaker
    /// Groups started and not finished yet.
    private(set) var running = 0
    private(set) var isStopped = false
    /// No group starts while set (the consumer has not taken what finished: back-pressure); the
    /// next `take` after it is cleared starts them.
    var heldBack = false
    /// The next group of the list never taken.
    private var next = 0
    /// Groups waiting for a probe of their origin, by origin.
    private var parked: [Origin: [Int]] = [:]
    /// Groups released from `parked`, or that the tier missed, taken before new ones (for their
    /// origin); `releasedStart` is the first not taken.
    private var released: [Int] = []
    private var releasedStart = 0
    /// Whether the tier is asked for each group first (empty: no tier).
    private let inTier: [Bool]
    /// How many tier lookups may be in flight, and how many are.
    private var tierWindow: TierWindow
    private var tierRunning = 0

    init(
        origins: [Origin?], alternates: [Int: [Origin]] = [:], jobs: Int, streams: Int = 100,
        breaker: OriginBreaker = OriginBreaker(), inTier: [Bool] = [], tierLookups: Int = 32
    ) {
        self.origins = origins
        self.alternates = alternates
        self.inTier = inTier
        tierWindow = TierWindow(cap: tierLookups)
        self.jobs = max(1, jobs)
        localJobs = min(self.jobs, Self.localFilesAtOnce)
        self.streams = max(1, streams)
        self.breaker = breaker
    }

    /// Takes groups while the next one's origin has room: each starts, waits, is parked, or is
    /// refused. Groups start in list order: one whose origin is full waits, and so do the ones
    /// after it.
    mutating func take(now: Double) -> [Step] {
        var steps: [Step] = []
        while !isStopped, !heldBack, let group = peekNext() {
            if releasedStart == released.count, group < inTier.count, inTier[group] {
                // New from the list, and the tier may have it: asked there first.
                guard tierRunning < tierWindow.limit else { break }
                advance()
                tierRunning += 1
                running += 1
                steps.append(.lookUp(group: group))
                continue
            }
            guard let primary = origins[group] else {
                guard localRunning < localJobs else { break }
                advance()
                localRunning += 1
                running += 1
                steps.append(.start(group: group, delay: 0))
                continue
            }
            let origin = admittingOrigin(group, primary)
            // The origin's window, found once for the question and the start.
            let window = windowIndex(origin)
            guard windows.values[window].hasRoom(jobs: jobs, streams: streams) else { break }
            advance()
            switch breaker.admitEntry(origin, now: now) {
            case .go, .probe:
                hold(group, origin, primary, window)
                steps.append(.start(group: group, delay: 0))
            case .wait(let until):
                hold(group, origin, primary, window)
                steps.append(.start(group: group, delay: max(0, until - now)))
            case .park:
                parked[origin, default: []].append(group)
            case .refuse(let message):
                steps.append(.refuse(group: group, message: message))
            }
        }
        return steps
    }

    private mutating func hold(_ group: Int, _ origin: Origin, _ primary: Origin, _ window: [Origin: OriginWindow].Index) {
        running += 1
        windows.values[window].started()
        if origin != primary { heldAt[group] = origin }
    }

    /// Where `origin`'s window is, made the first time its origin is asked about.
    private mutating func windowIndex(_ origin: Origin) -> [Origin: OriginWindow].Index {
        if let found = windows.index(forKey: origin) { return found }
        windows[origin] = OriginWindow()
        return windows.index(forKey: origin)!
    }

    /// The origin a group is admitted by: its own, unless that was given up and one of its
    /// mirrors' was not (then the first such). With every one given up, its own (refused).
    private func admittingOrigin(_ group: Int, _ primary: Origin) -> Origin {
        guard let others = alternates[group] else { return primary }
        return FallbackWalk.firstLive(primary, others) { breaker.isOpen($0) }
    }

    /// The next group to take, without taking it.
    private func peekNext() -> Int? {
        if releasedStart < released.count { return released[releasedStart] }
        return next < origins.count ? next : nil
    }

    private mutating func advance() {
        if releasedStart < released.count { releasedStart += 1 } else { next += 1 }
    }

    /// The tier answered a lookup: a hit ends the group, a miss puts it first in line for its
    /// origin. Either way the lookup's slot goes to the next.
    mutating func lookedUp(_ group: Int, hit: Bool, now: Double) -> [Step] {
        tierRunning -= 1
        running -= 1
        tierWindow.answered(hit: hit)
        if !hit { released.append(group) }
        return take(now: now)
    }

    /// A started group ended (delivered or failed): its slot goes to the next.
    mutating func finished(_ group: Int, now: Double) -> [Step] {
        running -= 1
        if let origin = heldAt.removeValue(forKey: group) ?? origins[group] {
            windows[origin]?.finished()
        } else {
            localRunning -= 1
        }
        return take(now: now)
    }

    /// A response's head arrived: its origin's window grows (not for 429 and 503, which halve it
    /// when the attempt ends), and a wider window may have room for the next groups.
    mutating func headArrived(
        _ origin: Origin, status: Int, multiplexed: Bool, closesConnections: Bool,
        now: Double
    ) -> [Step] {
        // Found once, and changed in place.
        guard status != 429, status != 503, let found = windows.index(forKey: origin) else { return [] }
        let before = windows.values[found].limit(jobs: jobs, streams: streams)
        windows.values[found].answered(multiplexed: multiplexed, closesConnections: closesConnections, jobs: jobs, streams: streams)
        // Only a window that grew (or changed its cap) can have room for another group.
        guard windows.values[found].limit(jobs: jobs, streams: streams) != before else { return [] }
        return take(now: now)
    }

    /// Whether every group has been taken (none waits for room or behind a probe).
    var allTaken: Bool { peekNext() == nil && parked.isEmpty && tierRunning == 0 }

    /// An attempt's outcome: its origin's window halves on 429 or 503 (it grew with the head);
    /// the breaker hears of its health, and a probe that ended releases the groups parked
    /// behind it.
    mutating func record(_ origin: Origin, _ report: OriginReport, now: Double) -> [Step] {
        if report.overloaded {
            windows[origin, default: OriginWindow()].overloaded()
        } else if report.outcome == .healthy {
            windows[origin, default: OriginWindow()].learned(
                multiplexed: report.multiplexed, closesConnections: report.closesConnections)
        }
        var steps = release(breaker.record(origin, report.outcome, now: now), now: now)
        // A wider window may have room for more at once.
        if steps.isEmpty, report.outcome == .healthy { steps = take(now: now) }
        return steps
    }

    /// An entry of `origin` gave up after its retries.
    mutating func entryGaveUp(_ origin: Origin, now: Double) -> [Step] {
        release(breaker.entryGaveUp(origin), now: now)
    }

    /// Whether a failed attempt of `origin` may be tried again, and when.
    mutating func admitRetry(_ origin: Origin, now: Double) -> RetryDecision {
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

/// How many lookups the shared tier gets at once, as a plain value: it grows by one with each hit
/// (up to `cap`) and halves with each miss (down to `floor`; BENCHMARKS.md as of 278b2e0, "The tier looked up
/// before the sources", has the measurements behind four). A tier that has what the run needs
/// is read wide; one that misses is asked just ahead of the origin, so that a miss is fetched
/// from the origin, and uploaded, soon after it was looked up (runners that start together on an
/// empty tier then rarely miss where another is about to upload).
struct TierWindow: Equatable {
    static let floor = 4.0
    /// At most `--jobs`: the tier is a server like any other.
    let cap: Double
    private let low: Double
    private(set) var size: Double

    init(cap: Int) {
        self.cap = Double(max(1, cap))
        low = min(Self.floor, self.cap)
        size = low
    }

    var limit: Int { Int(size) }

    mutating func answered(hit: Bool) {
        size = hit ? min(cap, size + 1) : max(low, size / 2)
    }
}
