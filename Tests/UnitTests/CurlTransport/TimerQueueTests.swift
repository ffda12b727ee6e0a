import Testing
import WorkerTestSupport

@testable import CurlTransport

/// The fetch engine's timers as a value: work in, due work out, the time passed in. No I/O.
@Suite(.hangLimit) struct TimerQueueTests {
    @Test func dueWorkComesOutEarliestFirstAndTiesInTheOrderAdded() {
        var timers = TimerQueue<String>()
        timers.add(id: 1, due: 5, "five")
        timers.add(id: 2, due: 1, "one")
        timers.add(id: 3, due: 3, "three")
        timers.add(id: 4, due: 1, "one again")
        #expect(timers.nextDue() == 1)
        #expect(timers.takeDue(now: 0.5).isEmpty)
        #expect(timers.takeDue(now: 3) == ["one", "one again", "three"])
        #expect(timers.nextDue() == 5 && timers.count == 1)
        #expect(timers.takeDue(now: 10) == ["five"])
        #expect(timers.nextDue() == nil && timers.count == 0)
    }

    @Test func aRemovedTimerNeverComesDueAndNoLongerSetsTheNextWakeUp() {
        var timers = TimerQueue<String>()
        timers.add(id: 1, due: 1, "early")
        timers.add(id: 2, due: 2, "late")
        #expect(timers.remove(id: 1) == "early")
        #expect(timers.remove(id: 1) == nil, "removed once")
        #expect(timers.nextDue() == 2, "the removed head is skipped")
        #expect(timers.takeDue(now: 5) == ["late"])
        #expect(timers.remove(id: 2) == nil, "taken timers cannot be removed")
    }

    /// A new order each run (`WORKER_TIMER_SEED` repeats one; a failure names it).
    /// Timers removed long before they are due (every transfer's deadline) do not pile up: the
    /// heap keeps at most about twice the pending ones, and those still come out in order.
    @Test func removedTimersDoNotPileUp() {
        var timers = TimerQueue<Int>()
        var generator = SplitMix64(seed: 44)
        var pending: [(due: Double, id: Int)] = []
        var overGrown = 0
        for id in 0..<100_000 {
            let due = Double.random(in: 1000...2000, using: &generator)
            timers.add(id: id, due: due, id)
            if id % 1000 == 0 {
                pending.append((due, id))
            } else {
                _ = timers.remove(id: id)
            }
            if timers.slotCount > max(65, 2 * timers.count + 1) { overGrown += 1 }
        }
        #expect(overGrown == 0)
        #expect(timers.count == 100)
        let expected = pending.sorted { ($0.due, $0.id) < ($1.due, $1.id) }.map(\.id)
        #expect(timers.takeDue(now: 2001) == expected)
    }

    @Test func manyTimersInRandomOrderComeOutSorted() {
        var timers = TimerQueue<Int>()
        let seed = TestSeed.from("WORKER_TIMER_SEED")
        var generator = SplitMix64(seed: seed)
        let dues = (0..<500).map { _ in Double(Int.random(in: 0..<1000, using: &generator)) }
        for (id, due) in dues.enumerated() { timers.add(id: id, due: due, id) }
        // Every third one removed before it is due.
        for id in stride(from: 0, to: dues.count, by: 3) { _ = timers.remove(id: id) }
        let taken = timers.takeDue(now: 1000)
        let expected = dues.indices.filter { $0 % 3 != 0 }.sorted { (dues[$0], $0) < (dues[$1], $1) }
        #expect(taken == expected, "seed \(seed) (WORKER_TIMER_SEED)")
    }
}
