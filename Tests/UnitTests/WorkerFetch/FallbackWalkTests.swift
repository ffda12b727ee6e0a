import Testing
import WorkerSupport

@testable import WorkerFetch
@testable import WorkerManifest

/// A group's fallback plan as a plain value, driven with answers and no I/O: the tier, each
/// member's sources and locations in order, given-up origins passed over, a stop.
@Suite struct FallbackWalkTests {
    private static let body = FetchedBody(
        temporaryPath: "/nonexistent/tmp/x", sha256: String(repeating: "a", count: 64),
        size: 3, etag: nil, lastModified: nil)
    private static let primary = "http://127.0.0.1:1/a", mirror = "http://127.0.0.1:2/a"
    private static let hash = try! ContentHash.parse("sha256:" + String(repeating: "a", count: 64)).get()

    /// A member's request: `url` with its `mirrors`, requested where `rewrite` sends them.
    private static func request(
        _ url: String = primary, mirrors: [String] = [],
        rewrite: [String] = []
    ) -> FetchRequest {
        var locator = Locator()
        if case .success(let rules) = URLRewrite.parse(rewrite) { locator.rewrite = rules }
        return FetchRequest(url: url, expected: hash, headers: [], localRoot: nil, mirrors: mirrors, locator: locator)
    }

    private static func delivered(attempts: Int = 1, bytes: Int64 = 3) -> SourceOutcome {
        SourceOutcome(answer: .delivered(.body(body)), attempts: attempts, bytes: bytes)
    }

    private static func failed(
        _ reason: FailureReason = .httpStatus, _ message: String = "HTTP 503", attempts: Int = 1,
        bytes: Int64 = 0
    ) -> SourceOutcome {
        SourceOutcome(
            answer: .failed(FetchFailure(reason, message, httpStatus: reason == .httpStatus ? 503 : nil)),
            attempts: attempts, bytes: bytes)
    }

    /// What the walk asked, in order, as words ("tier 0", "open 0", "source 0", "location URL once").
    private struct Drive {
        var walk: FallbackWalk
        var asked: [String] = []
        var givenUp: Set<String> = []
        var stopped: String?

        /// Runs the walk to its end; `answer` answers each step it asks, `members` opens each member.
        mutating func run(
            members: (Int) -> (FetchRequest, [FallbackWalk.Serving]),
            answer: (String) -> SourceOutcome
        ) -> [ItemResult] {
            var current: FetchRequest?
            while true {
                let givenUp = givenUp
                switch walk.next(givenUp: { givenUp.contains($0.name) ? "\($0.name) was given up" : nil }, stopped: stopped) {
                case .tier(let item):
                    asked.append("tier \(item)")
                    if let hit = walk.tierAnswered(answer("tier \(item)")) { return hit }
                case .open(let item, let first):
                    asked.append("open \(item)\(first ? " first" : "")")
                    let (request, sources) = members(item)
                    current = request
                    walk.opened(request, sources: sources)
                case .source(let number, _):
                    asked.append("source \(number)")
                    walk.answered(answer("source \(number)"))
                case .location(let index, let retries, _):
                    let words = "location \(current!.location(at: index).url)\(retries ? "" : " once")"
                    asked.append(words)
                    walk.answered(answer(words))
                case .finished(let results):
                    return results
                }
            }
        }
    }

    private static func one(
        _ request: FetchRequest, sources: [FallbackWalk.Serving] = []
    )
        -> (Int) -> (FetchRequest, [FallbackWalk.Serving])
    {
        { _ in (request, sources) }
    }

    private static let local = [FallbackWalk.Serving(number: 0, kind: .local)]

    @Test func aMissPassesToTheNextWayAndAttemptsAddUp() {
        var drive = Drive(walk: FallbackWalk(items: GroupItems([7]), tier: false))
        let results = drive.run(members: Self.one(Self.request(), sources: Self.local)) { step in
            step.hasPrefix("source") ? SourceOutcome(answer: .miss, attempts: 2, bytes: 10) : Self.delivered(attempts: 2)
        }
        #expect(drive.asked == ["open 7 first", "source 0", "location http://127.0.0.1:1/a"])
        #expect(results.count == 1 && results[0].item == 7)
        #expect(results[0].result.source == .origin)
        #expect(results[0].result.attempts == 4 && results[0].result.bytesReceived == 13)
        #expect(results[0].result.servedBy == nil && results[0].result.failover == nil)
    }

    @Test func aSourceFailureEndsTheMemberWithoutAskingTheOrigin() {
        var drive = Drive(walk: FallbackWalk(items: GroupItems([0]), tier: false))
        let results = drive.run(members: Self.one(Self.request(), sources: Self.local)) { _ in
            Self.failed(.io, "unreadable")
        }
        #expect(drive.asked == ["open 0 first", "source 0"])
        #expect(results[0].result.source == .local)
        guard case .failure(let failure) = results[0].result.result else { return #expect(Bool(false)) }
        #expect(failure.message == "unreadable")
    }

    @Test func whenEveryWayMissesTheMemberFails() {
        var drive = Drive(walk: FallbackWalk(items: GroupItems([0]), tier: false))
        let results = drive.run(members: Self.one(Self.request("file:///nonexistent/a"), sources: Self.local)) { _ in
            SourceOutcome(answer: .miss, attempts: 1, bytes: 0)
        }
        guard case .failure(let failure) = results[0].result.result else { return #expect(Bool(false)) }
        #expect(failure.message.contains("no source has"))
        #expect(results[0].result.source == nil && results[0].result.attempts == 1)
    }

    @Test func aMirrorServesAfterThePrimaryFailsAndOnlyTheLastLocationRetries() {
        var drive = Drive(walk: FallbackWalk(items: GroupItems([0]), tier: false))
        let results = drive.run(members: Self.one(Self.request(mirrors: [Self.mirror]))) { step in
            step.contains(":1/") ? Self.failed(attempts: 1, bytes: 5) : Self.delivered(attempts: 3)
        }
        #expect(drive.asked == ["open 0 first", "location http://127.0.0.1:1/a once", "location http://127.0.0.1:2/a"])
        let result = results[0].result
        #expect(result.servedBy == Self.mirror)
        #expect(result.failover?.origin == Origin.of(Self.primary))
        #expect(result.failover?.failure.httpStatus == 503)
        #expect(result.attempts == 4 && result.bytesReceived == 8)
    }

    @Test func everyLocationFailedNamesEachURLAndTheLastReason() {
        var drive = Drive(walk: FallbackWalk(items: GroupItems([0]), tier: false))
        let request = Self.request(mirrors: ["http://127.0.0.1:3/a"], rewrite: ["http://127.0.0.1:3/=http://127.0.0.1:4/"])
        let results = drive.run(members: Self.one(request)) { step in
            step.contains(":1/") ? Self.failed() : Self.failed(.timeout, "timed out")
        }
        guard case .failure(let failure) = results[0].result.result else { return #expect(Bool(false)) }
        #expect(failure.reason == .timeout)
        #expect(
            failure.message == "every URL failed: http://127.0.0.1:1/a: HTTP 503; "
                + "http://127.0.0.1:3/a (as http://127.0.0.1:4/a): timed out")
        #expect(results[0].result.source == .origin && results[0].result.attempts == 2)
    }

    @Test func aGivenUpOriginIsPassedOverWithoutARequest() {
        var drive = Drive(walk: FallbackWalk(items: GroupItems([0]), tier: false))
        drive.givenUp = [Origin.of(Self.primary).name]
        let results = drive.run(members: Self.one(Self.request(mirrors: [Self.mirror]))) { _ in Self.delivered() }
        #expect(drive.asked == ["open 0 first", "location http://127.0.0.1:2/a"])
        #expect(results[0].result.servedBy == Self.mirror)
        #expect(results[0].result.failover?.failure.reason == .connection, "said aloud: the entry's own URL was given up")
        #expect(results[0].result.attempts == 1)
    }

    @Test func aMemberWhoseEveryOriginWasGivenUpFailsWithoutARequest() {
        var drive = Drive(walk: FallbackWalk(items: GroupItems([0]), tier: false))
        drive.givenUp = [Origin.of(Self.primary).name]
        let results = drive.run(members: Self.one(Self.request())) { _ in Self.delivered() }
        #expect(drive.asked == ["open 0 first"])
        guard case .failure(let failure) = results[0].result.result else { return #expect(Bool(false)) }
        #expect(failure.reason == .connection && failure.message.contains("was given up"))
        #expect(results[0].result.attempts == 0)
    }

    @Test func aCancelledLocationTriesNoMirror() {
        var drive = Drive(walk: FallbackWalk(items: GroupItems([0, 1]), tier: false))
        let results = drive.run(members: Self.one(Self.request(mirrors: [Self.mirror]))) { step in
            step.contains(":1/") ? Self.failed(.cancelled, "stopped") : Self.delivered()
        }
        #expect(!drive.asked.contains("location http://127.0.0.1:2/a"))
        guard case .failure(let failure) = results[0].result.result else { return #expect(Bool(false)) }
        #expect(failure.reason == .cancelled)
    }

    @Test func theNextMemberIsTriedWhenOneFailsAndTheFirstDeliveryEndsTheGroup() {
        var drive = Drive(walk: FallbackWalk(items: GroupItems([3, 5, 9]), tier: false))
        let urls = [3: "http://127.0.0.1:1/a", 5: "http://127.0.0.1:2/a", 9: "http://127.0.0.1:3/a"]
        let results = drive.run(members: { item in (Self.request(urls[item]!), []) }) { step in
            step.contains(":1/") ? Self.failed() : Self.delivered()
        }
        #expect(drive.asked == ["open 3 first", "location http://127.0.0.1:1/a", "open 5", "location http://127.0.0.1:2/a"])
        #expect(results.map(\.item) == [3, 5])
        #expect(results[1].result.failover == nil, "another member is not a mirror")
    }

    @Test func aStoppedWalkAsksNothingAndTheMembersNotTriedEndAsNeverStarted() {
        var drive = Drive(walk: FallbackWalk(items: GroupItems([0, 1]), tier: false))
        drive.stopped = "the run's deadline passed"
        let results = drive.run(members: Self.one(Self.request())) { _ in Self.delivered() }
        #expect(drive.asked == ["open 0 first"])
        #expect(results.map(\.item) == [0, 1])
        guard case .failure(let first) = results[0].result.result, case .failure(let second) = results[1].result.result else {
            return #expect(Bool(false))
        }
        #expect(first.reason == .cancelled && first.message == "the run's deadline passed")
        #expect(results[0].result.attempts == 1, "the started member counts its one attempt, as a started group does")
        #expect(second.message == "the run's deadline passed before this entry started")
        #expect(results[1].result.attempts == 0)
    }

    @Test func theTierIsAskedFirstAndItsDiscardedBytesCountInTheFirstResult() {
        var drive = Drive(walk: FallbackWalk(items: GroupItems([4]), tier: true))
        let results = drive.run(members: Self.one(Self.request())) { step in
            step.hasPrefix("tier") ? SourceOutcome(answer: .miss, attempts: 0, bytes: 100) : Self.delivered(bytes: 3)
        }
        #expect(drive.asked == ["tier 4", "open 4 first", "location http://127.0.0.1:1/a"])
        #expect(results[0].result.bytesReceived == 103)
        #expect(results[0].result.source == .origin)
    }

    @Test func aTierHitEndsTheGroup() {
        var drive = Drive(walk: FallbackWalk(items: GroupItems([4, 6]), tier: true))
        let results = drive.run(members: Self.one(Self.request())) { _ in Self.delivered(bytes: 3) }
        #expect(drive.asked == ["tier 4"])
        #expect(results.map(\.item) == [4])
        #expect(results[0].result.source == .remote)
    }

    @Test func theScheduleAdmitsByTheFirstLiveLocationsOrigin() {
        let (a, b, c) = (Origin.of("http://a.test"), Origin.of("http://b.test"), Origin.of("http://c.test"))
        #expect(FallbackWalk.firstLive(a, [b, c]) { _ in false } == a)
        #expect(FallbackWalk.firstLive(a, [b, c]) { $0 == a } == b)
        #expect(FallbackWalk.firstLive(a, [b, c]) { $0 != c } == c)
        #expect(FallbackWalk.firstLive(a, [b, c]) { _ in true } == a, "every one given up: the entry's own, refused")
    }
}
