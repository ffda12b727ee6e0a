import WorkerManifest
import WorkerSupport

/// A download group's fallback plan and how far it got, as a plain value: the one place a
/// download moves on to the next thing to try. The steps, in order: the shared tier (when it may
/// have the content), then each member of the group in manifest order, and for each member the
/// ways its request may be served — the sources that serve it (a local file), then the origin's
/// locations (the URL, then its mirrors). A miss passes to the next way; a location that fails
/// passes to the member's next location (every location but the last gets one attempt: the next
/// one is the retry); a member that fails passes to the next member; a delivery ends the group.
/// A location whose origin the run gave up is passed over without a request — here, and nowhere
/// else. No I/O: `GroupDownload` performs the steps and tells the walk what each answered.
struct FallbackWalk: Sendable {
    /// A source that serves a member's request (`Fetcher.sources`, by number), asked before the
    /// origin's locations.
    struct Serving: Sendable, Equatable {
        let number: Int
        let kind: SourceKind
    }

    /// What to do next.
    enum Step: Sendable {
        /// Ask the shared tier for the content, with the first member's request (`tierAnswered`).
        case tier(item: Int)
        /// Make a member's request and open it (`opened`); `first`: the group's first member,
        /// whose origin the schedule knows.
        case open(item: Int, first: Bool)
        /// Ask a source for the member's content, with its request (`answered`).
        case source(Int, FetchRequest)
        /// Fetch the member's content from its location at this index (`FetchRequest.location(at:)`;
        /// `answered`): with its retries when it is the member's last location, else one attempt.
        case location(Int, retries: Bool, FetchRequest)
        /// The group ended: one result per member tried, in order; the last is its outcome.
        case finished([ItemResult])
    }

    /// What the member being tried has done so far.
    private struct Tried: Sendable {
        var attempts = 0
        var bytes: Int64 = 0
        /// Each location that failed (or was passed over), by index, in order.
        var failures: [(location: Int, failure: FetchFailure)] = []
        /// Whether a way was asked (a stop before that ends the member as never started).
        var asked = false
    }

    private let items: GroupItems
    private var tierPending: Bool
    /// The member being tried (an index into `items`).
    private var member = 0
    /// Its request and the sources that serve it, once opened.
    private var request: FetchRequest?
    private var sources: [Serving] = []
    /// The way asked next (or being asked): a source's index in `sources`, then
    /// `sources.count` + a location's index.
    private var way = 0
    private var tried = Tried()
    private var results: [ItemResult] = []
    /// Bytes the tier sent that were not the content (discarded): counted in the first result.
    private var tierBytes: Int64 = 0

    /// `tier`: the shared tier is asked first.
    init(items: GroupItems, tier: Bool) {
        self.items = items
        tierPending = tier
    }

    /// The next step. `givenUp` says why the run gave an origin up (nil: it did not); `stopped`,
    /// why the run stopped its downloads (nil: it did not).
    mutating func next(givenUp: (Origin) -> String?, stopped: String?) -> Step {
        if tierPending {
            tierPending = false
            return .tier(item: items[0])
        }
        while member < items.count {
            guard let request else {
                if let stopped, member > 0 { return endUnstarted(stopped) }
                return .open(item: items[member], first: member == 0)
            }
            if let stopped {
                // Asks nothing more: the member ends with what it met, or as cancelled.
                if tried.failures.isEmpty {
                    let started = tried.asked || member == 0
                    endMember(
                        .failure(FetchFailure(.cancelled, started ? stopped : "\(stopped) before this entry started")),
                        attempts: started ? max(tried.attempts, 1) : 0, source: nil)
                } else {
                    endMember(.failure(failure(of: tried, request)), attempts: tried.attempts, source: .origin)
                }
                return endUnstarted(stopped)
            }
            if way < sources.count {
                tried.asked = true
                return .source(sources[way].number, request)
            }
            let location = way - sources.count
            let count = request.locationCount
            guard location < count else {
                if tried.failures.isEmpty {
                    // Every way missed (or none serves the URL).
                    endMember(
                        .failure(FetchFailure(.io, "no source has \(Redact.url(request.url))")), attempts: tried.attempts,
                        source: nil)
                } else {
                    endMember(.failure(failure(of: tried, request)), attempts: tried.attempts, source: .origin)
                }
                continue
            }
            if let message = givenUp(request.origin(ofLocation: location)) {
                tried.failures.append((location, FetchFailure(.connection, message)))
                way += 1
                continue
            }
            tried.asked = true
            return .location(location, retries: location == count - 1, request)
        }
        return .finished(results)
    }

    /// The origin of the first location a walk asks (the schedule admits a group by it): the
    /// entry's own, unless the run gave that up and one of its mirrors' it did not (then the first
    /// such); with every one given up, the entry's own (the group is refused).
    static func firstLive(_ primary: Origin, _ mirrors: [Origin], givenUp: (Origin) -> Bool) -> Origin {
        guard !mirrors.isEmpty, givenUp(primary) else { return primary }
        return mirrors.first { !givenUp($0) } ?? primary
    }

    /// The tier answered: a delivery ends the group (its one result); anything else passes it to
    /// its members (nil), counting the bytes the tier sent for nothing.
    mutating func tierAnswered(_ outcome: SourceOutcome) -> [ItemResult]? {
        guard case .delivered(let delivery) = outcome.answer else {
            tierBytes += outcome.bytes
            return nil
        }
        results = [
            ItemResult(
                item: items[0],
                result: FetchResult(
                    result: .success(delivery), attempts: outcome.attempts,
                    bytesReceived: outcome.bytes, source: .remote))
        ]
        member = items.count
        return results
    }

    /// The member's request was made: the walk tries the `sources` that serve it, then its locations.
    mutating func opened(_ request: FetchRequest, sources: [Serving]) {
        self.request = request
        self.sources = sources
        way = 0
        tried = Tried()
    }

    /// The way asked answered.
    mutating func answered(_ outcome: SourceOutcome) {
        guard let request else { return }
        tried.attempts += outcome.attempts
        tried.bytes += outcome.bytes
        if way < sources.count {
            switch outcome.answer {
            case .miss: way += 1
            case .delivered(let delivery):
                endMember(.success(delivery), attempts: tried.attempts, source: sources[way].kind, isPrivate: outcome.isPrivate)
            case .failed(let failure): endMember(.failure(failure), attempts: tried.attempts, source: sources[way].kind)
            }
            return
        }
        let location = way - sources.count
        switch outcome.answer {
        case .miss:
            way += 1
        case .delivered(let delivery):
            var result = FetchResult(
                result: .success(delivery), attempts: tried.attempts, bytesReceived: tried.bytes,
                source: .origin, servedBy: location == 0 ? nil : request.location(at: location).listed,
                isPrivate: outcome.isPrivate)
            // Said aloud by the run: the entry's own URL failed (or was given up) and a mirror served.
            if location > 0, let primary = tried.failures.first, primary.location == 0 {
                result.failover = Failover(from: request.location(at: 0), primary.failure)
            }
            end(with: result)
        case .failed(let failure):
            tried.failures.append((location, failure))
            // A cancelled location ends the member: no other is asked.
            way = failure.reason == .cancelled ? sources.count + request.locationCount : way + 1
        }
    }

    /// The member being tried ended.
    private mutating func endMember(
        _ result: Result<Delivery, FetchFailure>, attempts: Int, source: SourceKind?,
        isPrivate: Bool = false
    ) {
        end(with: FetchResult(result: result, attempts: attempts, bytesReceived: tried.bytes, source: source, isPrivate: isPrivate))
    }

    private mutating func end(with result: FetchResult) {
        var result = result
        if results.isEmpty, tierBytes > 0 { result.bytesReceived += tierBytes }
        results.append(ItemResult(item: items[member], result: result, origin: request?.origin))
        let delivered = if case .success = result.result { true } else { false }
        member = delivered ? items.count : member + 1
        request = nil
    }

    /// Stopped: the members not tried end as the groups never started do.
    private mutating func endUnstarted(_ stopped: String) -> Step {
        if member < items.count {
            let unstarted = FetchResult(
                result: .failure(FetchFailure(.cancelled, "\(stopped) before this entry started")),
                attempts: 0, bytesReceived: 0, source: nil)
            results += items[member...].map { ItemResult(item: $0, result: unstarted) }
            member = items.count
        }
        return .finished(results)
    }

    /// Every location failed: the result names each URL's failure; the reason is the last one's.
    private func failure(of tried: Tried, _ request: FetchRequest) -> FetchFailure {
        guard let last = tried.failures.last else { return FetchFailure(.io, "no URL to fetch") }
        if last.failure.reason == .cancelled || tried.failures.count == 1 { return last.failure }
        let each = tried.failures.map { tried in
            let location = request.location(at: tried.location)
            let via = location.url == location.listed ? "" : " (as \(Redact.url(location.url)))"
            return "\(Redact.url(location.listed))\(via): \(tried.failure.message)"
        }
        return FetchFailure(
            last.failure.reason, "every URL failed: " + each.joined(separator: "; "),
            httpStatus: last.failure.httpStatus, detail: last.failure.detail)
    }
}

/// A plan item's download result.
public struct ItemResult: Sendable {
    public let item: Int
    public let result: FetchResult
    /// The origin its request was made for (its route's); nil for a local file, or an item not
    /// requested.
    public let origin: Origin?

    public init(item: Int, result: FetchResult, origin: Origin? = nil) {
        (self.item, self.result, self.origin) = (item, result, origin)
    }
}
