import WorkerManifest

/// The health of each origin (scheme, host, port) during a run, as a plain value: events go in
/// (an attempt's outcome, an entry that gave up), decisions come out (start, wait, probe, park,
/// refuse). No clock and no I/O: the caller passes the time, so tests drive it with numbers.
///
/// An origin that fails too often in a row is *open*: its remaining entries fail at once instead
/// of each waiting out its retries, while other origins go on. An origin remembered as down by an
/// earlier run starts *probing*: one entry goes first and the others wait for its answer.
public struct OriginBreaker: Sendable {
    public struct Settings: Sendable {
        /// Failed attempts in a row (no healthy answer between) that open the breaker. Several
        /// windows' worth, so a burst of entries that each fail once and then succeed does not.
        var failedAttempts = 48
        /// Entries in a row that gave up on origin failures.
        var failedEntries = 4
        /// The longest pause a `Retry-After` imposes on the whole origin.
        var maxPause = 30.0
    }

    /// What an attempt's outcome says about the origin.
    enum Outcome: Sendable, Equatable {
        /// The origin answered (any status but 5xx and 429, a body, a 304).
        case healthy
        /// No usable answer: refused, reset, timed out, TLS rejected, or 5xx / 429.
        case unhealthy(problem: String, retryAfter: Double?)
    }

    /// Whether an entry may start now.
    enum Admission: Sendable, Equatable {
        case go
        /// Go, as the one request that tests an origin remembered as down.
        case probe
        /// Wait: a probe of this origin is in flight; `released` says when to ask again.
        case park
        /// Not before this time (the origin asked for a pause with Retry-After).
        case wait(until: Double)
        /// Fail at once without a request.
        case refuse(String)
    }

    /// Something the run reports or acts on.
    enum Event: Sendable, Equatable {
        case opened(origin: Origin, problem: String)
        /// A probe ended: entries parked for this origin may ask again.
        case released(origin: Origin)
    }

    private enum Mode: Sendable, Equatable {
        case closed
        case probing(inFlight: Bool)
        case open(problem: String)
    }

    private struct State: Sendable {
        var mode: Mode
        var failedAttempts = 0
        var failedEntries = 0
        var pausedUntil = 0.0
        var answered = false
        var notTried = 0
        var lastProblem: String?
    }

    /// How one origin ended the run.
    public struct Summary: Sendable, Equatable {
        public let origin: Origin
        /// It answered at least once.
        public let answered: Bool
        /// The problem that opened the breaker, if it opened.
        public let openedFor: String?
        /// Entries failed at once without a request.
        public let notTried: Int
    }

    let settings: Settings
    private var origins: [Origin: State] = [:]
    /// Whether any origin was given up in this run: until one is, asking costs no lookup.
    private var anyGivenUp = false

    /// `down`: origins an earlier run left open; they start by probing.
    package init(settings: Settings = Settings(), down: Set<Origin> = []) {
        self.settings = settings
        for origin in down { origins[origin] = State(mode: .probing(inFlight: false)) }
    }

    /// Whether an entry of `origin` may start (its first attempt).
    mutating func admitEntry(_ origin: Origin, now: Double) -> Admission {
        // The origin's state changed in place: one lookup, no copy of it.
        Self.admitEntry(&origins[origin, default: State(mode: .closed)], origin, now: now)
    }

    private static func admitEntry(_ state: inout State, _ origin: Origin, now: Double) -> Admission {
        switch state.mode {
        case .open(let problem):
            state.notTried += 1
            return .refuse(Self.message(origin, problem))
        case .probing(inFlight: true):
            return .park
        case .probing(inFlight: false):
            state.mode = .probing(inFlight: true)
            return .probe
        case .closed:
            return state.pausedUntil > now ? .wait(until: state.pausedUntil) : .go
        }
    }

    /// Whether `origin` was given up (its entries fail at once), without counting anything.
    func isOpen(_ origin: Origin) -> Bool {
        givenUp(origin) != nil
    }

    /// Why `origin` was given up, as a refused entry's message; nil while it was not.
    func givenUp(_ origin: Origin) -> String? {
        guard anyGivenUp, case .open(let problem) = origins[origin]?.mode else { return nil }
        return Self.message(origin, problem)
    }

    /// Whether an entry already started may make another attempt at `origin`.
    mutating func admitRetry(_ origin: Origin, now: Double) -> Admission {
        let state = origins[origin] ?? State(mode: .closed)
        switch state.mode {
        case .open(let problem):
            return .refuse(Self.message(origin, problem))
        case .probing, .closed:
            return state.pausedUntil > now ? .wait(until: state.pausedUntil) : .go
        }
    }

    /// Records an attempt's outcome.
    mutating func record(_ origin: Origin, _ outcome: Outcome, now: Double) -> [Event] {
        let events = Self.record(&origins[origin, default: State(mode: .closed)], origin, outcome, now: now, settings: settings)
        if events.contains(where: { if case .opened = $0 { true } else { false } }) { anyGivenUp = true }
        return events
    }

    private static func record(
        _ state: inout State, _ origin: Origin, _ outcome: Outcome, now: Double,
        settings: Settings
    ) -> [Event] {
        switch outcome {
        case .healthy:
            state.failedAttempts = 0
            state.failedEntries = 0
            state.answered = true
            if case .probing = state.mode {
                state.mode = .closed
                return [.released(origin: origin)]
            }
            return []
        case .unhealthy(let problem, let retryAfter):
            state.failedAttempts += 1
            state.lastProblem = problem
            if let retryAfter, retryAfter > 0 {
                state.pausedUntil = max(state.pausedUntil, now + min(retryAfter, settings.maxPause))
            }
            switch state.mode {
            case .open:
                return []
            case .probing:
                // The origin was down before and still is: one request was enough to know.
                state.mode = .open(problem: problem)
                return [.opened(origin: origin, problem: problem), .released(origin: origin)]
            case .closed:
                guard state.failedAttempts >= settings.failedAttempts else { return [] }
                state.mode = .open(problem: problem)
                return [.opened(origin: origin, problem: problem)]
            }
        }
    }

    /// Records an entry that gave up after its attempts failed on the origin's side.
    mutating func entryGaveUp(_ origin: Origin) -> [Event] {
        var state = origins[origin] ?? State(mode: .closed)
        defer { origins[origin] = state }
        state.failedEntries += 1
        guard case .closed = state.mode, state.failedEntries >= settings.failedEntries else { return [] }
        let problem = state.lastProblem ?? "failing"
        state.mode = .open(problem: problem)
        anyGivenUp = true
        return [.opened(origin: origin, problem: problem)]
    }

    /// Every origin the run touched, sorted.
    var summaries: [Summary] {
        origins.keys.sorted { $0.name < $1.name }.map { origin in
            let state = origins[origin]!
            var openedFor: String?
            if case .open(let problem) = state.mode { openedFor = problem }
            return Summary(origin: origin, answered: state.answered, openedFor: openedFor, notTried: state.notTried)
        }
    }

    static func message(_ origin: Origin, _ problem: String) -> String {
        "origin unreachable: \(origin) (\(problem)); not tried"
    }
}

/// What a download asks of the run's origin breaker, and tells it. A class's (the run's queue):
/// a download's lane carries it as one reference.
protocol OriginGate: AnyObject, Sendable {
    /// Before another attempt: go, wait this many seconds at least, or give up.
    func admitRetry(_ origin: Origin) -> RetryDecision
    func record(_ origin: Origin, _ report: OriginReport)
    /// The entry failed for good on an origin problem.
    func entryGaveUp(_ origin: Origin)
    /// Why the run gave `origin` up (a mirror of it is then passed over); nil while it has not.
    func givenUp(_ origin: Origin) -> String?
}

/// What one attempt told about its origin: its health, its protocol, whether it asked for less.
struct OriginReport: Sendable, Equatable {
    var outcome: OriginBreaker.Outcome
    /// The answer came over HTTP/2 (requests share one connection).
    var multiplexed = false
    /// The server closed the connection after answering (HTTP/1.0 or `Connection: close`).
    var closesConnections = false
    /// 429 or 503: the origin asks for fewer requests at once.
    var overloaded = false
}

/// Whether a download may try its origin again.
enum RetryDecision: Sendable, Equatable {
    case go
    case wait(seconds: Double)
    case giveUp
}
