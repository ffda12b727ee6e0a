import Testing
import WorkerManifest
import WorkerTestSupport

@testable import WorkerFetch

/// The run's coordinator as a value: events in, effects out, the time passed in. No I/O: what the
/// queue would launch, when it would answer its consumer and with what, which timer it would arm.
@Suite(.hangLimit) struct RunCoordinatorTests {
    let a = Origin.of("http://a.test:80")

    /// `count` groups of one local file each, `jobs` at once.
    static func local(_ count: Int, jobs: Int, highWater: Int = 4096) -> RunCoordinator {
        RunCoordinator(
            schedule: DownloadSchedule(origins: Array(repeating: nil, count: count), jobs: jobs),
            groups: (0..<count).map { DownloadGroup(items: [$0]) }, highWater: highWater)
    }

    static func launched(_ effects: RunCoordinator.Effects) -> [Int] {
        effects.launches.compactMap { if case .run(let group, _) = $0 { group } else { nil } }
    }

    static func batch(_ effects: RunCoordinator.Effects) -> [Int]? {
        guard case .batch(let finished) = effects.answer else { return nil }
        return finished.map(\.group)
    }

    static func delivered(_ group: Int) -> RunCoordinator.Event {
        .finished(
            group: group,
            results: [
                ItemResult(
                    item: group,
                    result: FetchResult(
                        result: .success(.notModified), attempts: 1,
                        bytesReceived: 0, source: nil))
            ])
    }

    @Test func theConsumerIsAnsweredOnceEnoughGroupsAreReadyAndFewerWaitForAShortTimer() {
        var run = Self.local(16, jobs: 4)
        #expect(run.wakeCount == 2)
        #expect(Self.launched(run.handle(.start, now: 0)) == [0, 1, 2, 3])
        // Nothing ready: the consumer waits, at most the time it gave.
        let asked = run.handle(.consumerAsks(within: 5), now: 0)
        #expect(asked.answer == nil && asked.arm?.seconds == 5 && asked.arm?.wait.short == false)
        // One ready, fewer than the wake count: its timer is made to fall within the flush delay.
        let first = run.handle(Self.delivered(0), now: 1)
        #expect(Self.launched(first) == [4], "the slot goes to the next group")
        #expect(first.answer == nil && first.cancel == asked.arm?.wait)
        #expect(first.arm?.wait.short == true && first.arm?.seconds == RunCoordinator.flushDelay)
        // Two: answered at once, and the short timer is no longer needed.
        let second = run.handle(Self.delivered(1), now: 1)
        #expect(Self.batch(second) == [0, 1] && second.cancel == first.arm?.wait)
        #expect(run.waiting == nil && run.ready.isEmpty)
    }

    @Test func aTimerThatFallsAnswersWithWhatIsReadyAndAReplacedOneFallsToNoEffect() {
        var run = Self.local(16, jobs: 4)
        _ = run.handle(.start, now: 0)
        let long = run.handle(.consumerAsks(within: 5), now: 0).arm!.wait
        let short = run.handle(Self.delivered(2), now: 1).arm!.wait
        #expect(run.handle(.timerFell(token: long.token), now: 2).answer == nil, "a replaced timer")
        #expect(Self.batch(run.handle(.timerFell(token: short.token), now: 2)) == [2])
        // With nothing ready the consumer's own wait ends with an empty batch.
        let again = run.handle(.consumerAsks(within: 5), now: 2).arm!.wait
        #expect(Self.batch(run.handle(.timerFell(token: again.token), now: 7)) == [])
    }

    @Test func theEndComesOnceEveryGroupWasHandedOverAndNothingRuns() {
        var run = Self.local(2, jobs: 2)
        _ = run.handle(.start, now: 0)
        _ = run.handle(Self.delivered(0), now: 1)
        _ = run.handle(Self.delivered(1), now: 1)
        #expect(Self.batch(run.handle(.consumerAsks(within: 5), now: 1)) == [0, 1], "nothing runs: what is ready at once")
        let last = run.handle(.consumerAsks(within: 5), now: 1)
        guard case .end = last.answer else {
            Issue.record("expected the end, got \(String(describing: last.answer))")
            return
        }
        #expect(last.arm == nil)
    }

    @Test func atHighWaterNothingStartsUntilTheConsumerAsks() {
        var run = Self.local(6, jobs: 1, highWater: 2)
        #expect(Self.launched(run.handle(.start, now: 0)) == [0])
        #expect(Self.launched(run.handle(Self.delivered(0), now: 1)) == [1])
        #expect(Self.launched(run.handle(Self.delivered(1), now: 2)) == [], "two not taken: held back")
        let asked = run.handle(.consumerAsks(within: 5), now: 3)
        #expect(Self.launched(asked) == [2], "taking them lets the next start")
        #expect(Self.batch(asked) == [0, 1])
    }

    @Test func aStopStartsNothingMoreAndTheRunEndsWithWhatWasInFlight() {
        var run = Self.local(16, jobs: 2)
        _ = run.handle(.start, now: 0)
        _ = run.handle(.consumerAsks(within: 5), now: 0)
        _ = run.handle(.stop, now: 1)
        let first = run.handle(Self.delivered(0), now: 1)
        #expect(Self.launched(first).isEmpty && first.answer == nil)
        let second = run.handle(Self.delivered(1), now: 1)
        #expect(Self.launched(second).isEmpty)
        #expect(Self.batch(second) == [0, 1], "nothing runs any more: the consumer gets what finished")
        guard case .end = run.handle(.consumerAsks(within: 5), now: 1).answer else {
            Issue.record("expected the end")
            return
        }
        #expect(run.schedule.unstarted == Array(2..<16))
    }

    @Test func theTiersHitIsReadyAndItsMissWaitsForTheOriginsTurn() {
        var run = RunCoordinator(
            schedule: DownloadSchedule(origins: [a, a], jobs: 2, inTier: [true, true], tierLookups: 2),
            groups: [
                DownloadGroup(items: [0], route: Locator().route("http://a.test/0", expected: nil)),
                DownloadGroup(items: [1], route: Locator().route("http://a.test/1", expected: nil)),
            ],
            highWater: 4096)
        #expect(run.handle(.start, now: 0).launches == [.lookUp(group: 0), .lookUp(group: 1)])
        let hit = run.handle(
            .lookedUp(
                group: 0,
                hit: [
                    ItemResult(
                        item: 0,
                        result: FetchResult(
                            result: .success(.notModified), attempts: 1, bytesReceived: 0, source: .remote))
                ]), now: 1)
        #expect(hit.launches.isEmpty && run.ready.map(\.group) == [0])
        #expect(
            run.handle(.lookedUp(group: 1, hit: nil), now: 1).launches == [.run(group: 1, delay: 0)],
            "a miss goes to its origin")
    }
}
