import WorkerManifest

/// How many requests one origin gets at once, as a plain value.
///
/// Until the origin's protocol is known, and on HTTP/1.1 (one request per connection), the window
/// starts at one and grows by two with each answer as its head arrives, up to `--jobs` connections (slow start: a
/// small server's accept queue is not flooded with connects it drops). Two, as TCP's slow start
/// may grow by two segments an acknowledgment (RFC 3465): the window triples each round trip, and
/// reaches 50 connections a round trip sooner than by one (docs/ARCHITECTURE.md, "Measurements
/// behind the code"). On HTTP/2 the requests
/// share a connection (one per fetch engine), so once the first answer says so the window opens to
/// `streams`: `--max-streams` per connection times the engines (the server's
/// SETTINGS_MAX_CONCURRENT_STREAMS still applies: beyond it libcurl opens another connection, up
/// to `--jobs`).
/// A server that closes the connection after every answer (HTTP/1.0, `Connection: close`) makes
/// each request a new connect: it gets at most `Self.connectsAtOnce`, below the accept queue of a
/// small server (Python's http.server listens with a backlog of 5), whose overflow the kernel
/// answers by dropping the connect and retrying it a second later.
/// A 429 or 503 halves the window; past that point it grows back by one per window's worth of
/// answers (TCP's congestion avoidance), so an overloaded origin is not pushed straight back.
struct OriginWindow: Sendable, Equatable {
    /// Requests in flight.
    private(set) var inFlight = 0
    /// The window; fractional while it grows by 1/size per answer.
    private(set) var size = 1.0
    /// Past this size the window grows slowly (set by a halving).
    private var threshold = Double.infinity
    /// Whether the origin answered over HTTP/2; nil before its first answer.
    private(set) var multiplexed: Bool?
    /// The origin's last answer closed its connection.
    private(set) var closesConnections = false
    static let connectsAtOnce = 4
    /// Growth per answer below the threshold.
    static let slowStartStep = 2.0

    /// The most requests in flight now, given the caps for each protocol.
    func limit(jobs: Int, streams: Int) -> Int {
        max(1, min(Int(size), cap(jobs: jobs, streams: streams)))
    }

    private func cap(jobs: Int, streams: Int) -> Int {
        if multiplexed == true { return streams }
        return closesConnections ? min(jobs, Self.connectsAtOnce) : jobs
    }

    func hasRoom(jobs: Int, streams: Int) -> Bool {
        inFlight < limit(jobs: jobs, streams: streams)
    }

    mutating func started() {
        inFlight += 1
    }

    mutating func finished() {
        inFlight -= 1
    }

    /// An answer ended well: what it said of the connection is kept; the window grew when its
    /// head arrived (`answered`).
    mutating func learned(multiplexed: Bool, closesConnections: Bool) {
        if multiplexed && self.multiplexed != true { return }  // the head opens the window wide
        self.multiplexed = multiplexed
        self.closesConnections = closesConnections
    }

    /// An answer began (its head arrived): the window grows (and opens wide the first time
    /// HTTP/2 is seen). Growing as answers begin rather than as they complete keeps a few large
    /// bodies from a slow server from downloading one after another. Only the origin's own
    /// answers reach it: the shared tier is looked up with an admission of its own.
    mutating func answered(multiplexed: Bool, closesConnections: Bool = false, jobs: Int, streams: Int) {
        let opensWide = multiplexed && self.multiplexed != true && threshold == .infinity
        self.multiplexed = multiplexed
        self.closesConnections = closesConnections
        let ceiling = Double(cap(jobs: jobs, streams: streams))
        if opensWide {
            size = ceiling
        } else if size < threshold {
            size += Self.slowStartStep
        } else {
            size += 1 / size
        }
        size = min(size, ceiling)
    }

    /// A 429 or 503: half the window, and slow growth from there.
    mutating func overloaded() {
        size = max(1, (size / 2).rounded(.down))
        threshold = size
    }
}
