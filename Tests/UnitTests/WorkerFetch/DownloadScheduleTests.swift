import Testing
import WorkerManifest
import WorkerTestSupport

@testable import WorkerFetch

/// The download scheduler as a value: groups in, steps out, the time passed in. No I/O.
@Suite(.hangLimit) struct DownloadScheduleTests {
    let a = Origin.of("http://a.test:80")
    let b = Origin.of("http://b.test:80")
    let answer = OriginReport(outcome: .healthy)
    let answerOverHTTP2 = OriginReport(outcome: .healthy, multiplexed: true)

    /// A response's head from `origin` (status 200 unless said).
    static func head(
        _ schedule: inout DownloadSchedule, _ origin: Origin, status: Int = 200, http2: Bool = false,
        now: Double = 0
    ) -> [Int] {
        started(schedule.headArrived(origin, status: status, multiplexed: http2, closesConnections: false, now: now))
    }

    static func started(_ steps: [DownloadSchedule.Step]) -> [Int] {
        steps.compactMap { if case .start(let group, _) = $0 { group } else { nil } }
    }

    @Test func heldBackNothingStartsUntilReleased() {
        var schedule = DownloadSchedule(origins: [nil, nil, nil], jobs: 2)
        #expect(Self.started(schedule.take(now: 0)) == [0, 1])
        schedule.heldBack = true
        #expect(schedule.finished(0, now: 1).isEmpty, "a finished group's slot waits while held back")
        #expect(!schedule.allTaken)
        schedule.heldBack = false
        #expect(Self.started(schedule.take(now: 1)) == [2])
    }

    @Test func localFilesRunJobsAtOnceInListOrder() {
        var schedule = DownloadSchedule(origins: [nil, nil, nil, nil, nil], jobs: 2)
        #expect(Self.started(schedule.take(now: 0)) == [0, 1])
        #expect(schedule.running == 2)
        #expect(schedule.take(now: 0).isEmpty, "no room until one finishes")
        #expect(Self.started(schedule.finished(1, now: 1)) == [2])
        #expect(Self.started(schedule.finished(0, now: 1)) == [3])
        #expect(Self.started(schedule.finished(2, now: 1)) == [4])
        #expect(schedule.finished(3, now: 1).isEmpty && schedule.finished(4, now: 1).isEmpty)
        #expect(schedule.running == 0 && schedule.unstarted.isEmpty)
    }

    @Test func localFilesStopAtTheirOwnCapWhateverTheJobs() {
        var schedule = DownloadSchedule(origins: Array(repeating: nil, count: 40), jobs: 50)
        #expect(schedule.take(now: 0).count == DownloadSchedule.localFilesAtOnce)
        #expect(schedule.take(now: 0).isEmpty, "no room until one finishes")
        #expect(Self.started(schedule.finished(0, now: 1)) == [DownloadSchedule.localFilesAtOnce])
    }

    @Test func http1StartsWithOneConnectionAndGrowsWithAnswersUpToJobs() {
        var schedule = DownloadSchedule(origins: Array(repeating: a, count: 20), jobs: 6)
        #expect(Self.started(schedule.take(now: 0)) == [0], "one connection first")
        #expect(Self.head(&schedule, a) == [1, 2], "an answer begins: two more")
        #expect(Self.head(&schedule, a) == [3, 4])
        #expect(Self.head(&schedule, a) == [5], "--jobs is the cap")
        #expect(Self.head(&schedule, a).isEmpty)
        #expect(schedule.record(a, answer, now: 0).isEmpty, "an answer that ends adds nothing: it grew as it began")
        #expect(schedule.windows[a]?.limit(jobs: 6, streams: 100) == 6)
        #expect(Self.started(schedule.finished(0, now: 0)) == [6])
    }

    @Test func http2OpensTheWindowToMaxStreamsAtTheFirstAnswer() {
        var schedule = DownloadSchedule(origins: Array(repeating: a, count: 50), jobs: 4, streams: 32)
        #expect(Self.started(schedule.take(now: 0)) == [0])
        #expect(Self.head(&schedule, a, http2: true) == Array(1...31), "32 in flight on one connection")
        #expect(schedule.running == 32)
        #expect(schedule.record(a, answerOverHTTP2, now: 0).isEmpty)
        #expect(schedule.windows[a]?.limit(jobs: 4, streams: 32) == 32, "the end of the answer keeps it open")
    }

    static func lookedUp(_ steps: [DownloadSchedule.Step]) -> [Int] {
        steps.compactMap { if case .lookUp(let group) = $0 { group } else { nil } }
    }

    @Test func theTierIsAskedFirstWithItsOwnAdmissionAndAMissGoesFirstToItsOrigin() {
        // Groups 0-6 pinned (the tier may have them), 7 not; at most five lookups at once.
        #expect(TierWindow.floor == 4)
        var schedule = DownloadSchedule(
            origins: Array(repeating: a, count: 8), jobs: 8,
            inTier: [true, true, true, true, true, true, true, false], tierLookups: 5)
        let first = schedule.take(now: 0)
        #expect(Self.lookedUp(first) == [0, 1, 2, 3] && Self.started(first).isEmpty, "four lookups to begin with, no origin slot")
        #expect(schedule.windows[a] == nil, "no origin's window touched by a lookup")
        // A hit ends its group and widens the tier's window (to its cap of five).
        #expect(Self.lookedUp(schedule.lookedUp(1, hit: true, now: 0)) == [4, 5])
        // A miss narrows it again and puts its group first in line for the origin (slow start: one).
        #expect(Self.started(schedule.lookedUp(0, hit: false, now: 0)) == [0])
        #expect(schedule.lookedUp(2, hit: false, now: 0).isEmpty, "a miss waits for room in its origin's window")
        // The origin's own answer grows its window: the missed group first, then in list order
        // a lookup and the group the tier is not asked for.
        let grown = schedule.headArrived(a, status: 200, multiplexed: false, closesConnections: false, now: 0)
        #expect(Self.started(grown) == [2, 7] && Self.lookedUp(grown) == [6])
        #expect(schedule.lookedUp(3, hit: false, now: 0).isEmpty)
        for hit in [4, 5, 6] { #expect(schedule.lookedUp(hit, hit: true, now: 0).isEmpty) }
        #expect(Self.head(&schedule, a) == [3])
        #expect(schedule.running == 4 && schedule.allTaken)
    }

    @Test func theTiersWindowGrowsWithHitsAndHalvesWithMisses() {
        var window = TierWindow(cap: 20)
        #expect(window.limit == 4)
        for _ in 0..<30 { window.answered(hit: true) }
        #expect(window.limit == 20, "capped")
        window.answered(hit: false)
        #expect(window.limit == 10)
        for _ in 0..<5 { window.answered(hit: false) }
        #expect(window.limit == 4, "never below four")
        var one = TierWindow(cap: 1)
        one.answered(hit: true)
        #expect(one.limit == 1, "never above --jobs")
    }

    @Test func groupsInLookupWhenTheRunStopsAreLeftUnstarted() {
        var schedule = DownloadSchedule(origins: [a, a, a, a, a], jobs: 4, inTier: [true, true, true, true, true])
        #expect(Self.lookedUp(schedule.take(now: 0)) == [0, 1, 2, 3])
        schedule.stop()
        #expect(schedule.lookedUp(0, hit: false, now: 0).isEmpty, "a stopped schedule starts nothing")
        #expect(schedule.lookedUp(1, hit: true, now: 0).isEmpty)
        #expect(schedule.lookedUp(2, hit: false, now: 0).isEmpty && schedule.lookedUp(3, hit: false, now: 0).isEmpty)
        #expect(schedule.running == 0)
        #expect(Set(schedule.unstarted) == [0, 2, 3, 4], "the misses wait unstarted, the hit is done, the last never asked")
    }

    @Test func aFewLargeBodiesFromASlowServerRunInParallelFromTheStart() {
        // Three 10 MB files at 2 MB/s a connection: none completes for 5 s, but each head comes
        // within a round trip, and each head opens room for more.
        var schedule = DownloadSchedule(origins: [a, a, a], jobs: 16)
        #expect(Self.started(schedule.take(now: 0)) == [0])
        #expect(Self.head(&schedule, a, now: 0.001) == [1, 2], "the first head: the other two start at once")
        #expect(schedule.running == 3, "all three in flight before any body is done")
    }

    @Test func anOverloadedAnswerDoesNotGrowTheWindowAsItBegins() {
        var schedule = DownloadSchedule(origins: Array(repeating: a, count: 10), jobs: 8)
        _ = schedule.take(now: 0)
        #expect(Self.head(&schedule, a, status: 503).isEmpty)
        #expect(Self.head(&schedule, a, status: 429).isEmpty)
        #expect(schedule.running == 1)
    }

    @Test func overloadHalvesTheWindowThenItGrowsBackSlowly() {
        var window = OriginWindow()
        for _ in 0..<4 { window.answered(multiplexed: false, jobs: 16, streams: 100) }
        #expect(window.limit(jobs: 16, streams: 100) == 9, "slow start: two more per answer")
        window.overloaded()
        #expect(window.limit(jobs: 16, streams: 100) == 4, "a 429 or 503 halves it")
        for _ in 0..<4 { window.answered(multiplexed: false, jobs: 16, streams: 100) }
        #expect(window.limit(jobs: 16, streams: 100) == 4, "past the halving, +1/size per answer")
        window.answered(multiplexed: false, jobs: 16, streams: 100)
        #expect(window.limit(jobs: 16, streams: 100) == 5, "about one more per window's worth of answers")
        window.overloaded()
        window.overloaded()
        window.overloaded()
        #expect(window.limit(jobs: 16, streams: 100) == 1, "never below one")
    }

    @Test func anOverloadedOriginGetsFewerRequestsAtOnce() {
        var schedule = DownloadSchedule(origins: Array(repeating: a, count: 20), jobs: 4)
        _ = schedule.take(now: 0)
        for _ in 0..<3 { _ = Self.head(&schedule, a) }
        #expect(schedule.running == 4)
        let busy = OriginReport(outcome: .unhealthy(problem: "HTTP 503", retryAfter: nil), overloaded: true)
        #expect(schedule.record(a, busy, now: 0).isEmpty)
        #expect(schedule.finished(0, now: 0).isEmpty, "3 in flight, window 2")
        #expect(schedule.finished(1, now: 0).isEmpty)
        #expect(Self.started(schedule.finished(2, now: 0)) == [4], "back under the halved window")
    }

    @Test func originsDoNotShareAWindow() {
        var schedule = DownloadSchedule(origins: [a, b, a, b], jobs: 4)
        #expect(Self.started(schedule.take(now: 0)) == [0, 1], "one to each origin; the next a waits")
        #expect(Self.head(&schedule, a) == [2])
        #expect(Self.head(&schedule, b) == [3])
    }

    @Test func anOriginDownBeforeIsProbedOnceThenReleased() {
        var schedule = DownloadSchedule(origins: [a, a, a], jobs: 8, breaker: OriginBreaker(down: [a]))
        #expect(Self.started(schedule.take(now: 0)) == [0], "one probe")
        #expect(Set(schedule.unstarted) == [1, 2])
        #expect(Self.head(&schedule, a, now: 1).isEmpty, "its head grows the window, but the rest wait for the probe's end")
        #expect(Self.started(schedule.record(a, answer, now: 1)) == [1, 2], "it answered: the rest start")
        #expect(schedule.finished(0, now: 1).isEmpty && schedule.unstarted.isEmpty)
    }

    @Test func aProbeThatFailsRefusesTheRestWithoutARequest() {
        var schedule = DownloadSchedule(origins: [a, a, a], jobs: 8, breaker: OriginBreaker(down: [a]))
        _ = schedule.take(now: 0)
        #expect(
            schedule.record(a, OriginReport(outcome: .unhealthy(problem: "connection refused", retryAfter: nil)), now: 1)
                .isEmpty)
        #expect(schedule.admitRetry(a, now: 1) == .giveUp)
        let steps = schedule.finished(0, now: 1)
        #expect(
            steps == [
                .refuse(group: 1, message: "origin unreachable: \(a) (connection refused); not tried"),
                .refuse(group: 2, message: "origin unreachable: \(a) (connection refused); not tried"),
            ])
        #expect(schedule.running == 0, "refused groups never held a slot")
    }

    @Test func retryAfterDelaysTheOriginsNextGroupsOnly() {
        var schedule = DownloadSchedule(origins: [a, a, b], jobs: 1)
        #expect(Self.started(schedule.take(now: 0)) == [0])
        let busy = OriginReport(outcome: .unhealthy(problem: "HTTP 503", retryAfter: 5), overloaded: true)
        #expect(schedule.record(a, busy, now: 10).isEmpty)
        #expect(schedule.admitRetry(a, now: 11) == .wait(seconds: 4))
        #expect(
            schedule.finished(0, now: 11) == [.start(group: 1, delay: 4), .start(group: 2, delay: 0)],
            "another origin does not wait")
    }

    @Test func entriesGivingUpOpenTheBreaker() {
        var schedule = DownloadSchedule(origins: Array(repeating: a, count: 8), jobs: 1)
        let failed = OriginReport(outcome: .unhealthy(problem: "HTTP 500", retryAfter: nil))
        var group = 0
        _ = schedule.take(now: 0)
        for _ in 0..<3 {
            _ = schedule.record(a, failed, now: 0)
            #expect(schedule.entryGaveUp(a, now: 0).isEmpty)
            #expect(Self.started(schedule.finished(group, now: 0)) == [group + 1])
            group += 1
        }
        _ = schedule.record(a, failed, now: 0)
        _ = schedule.entryGaveUp(a, now: 0)
        let steps = schedule.finished(group, now: 0)
        #expect(steps == (4..<8).map { .refuse(group: $0, message: "origin unreachable: \(a) (HTTP 500); not tried") })
        #expect(schedule.breaker.summaries.first?.notTried == 4)
    }

    @Test func aStopStartsNothingMoreAndListsTheRest() {
        var schedule = DownloadSchedule(origins: [nil, nil, nil, nil], jobs: 2)
        _ = schedule.take(now: 0)
        schedule.stop()
        #expect(schedule.finished(0, now: 1).isEmpty)
        #expect(schedule.finished(1, now: 1).isEmpty)
        #expect(schedule.unstarted == [2, 3])
        #expect(schedule.running == 0)
    }
}
