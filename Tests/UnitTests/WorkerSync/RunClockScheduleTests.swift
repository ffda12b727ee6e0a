import Testing
import WorkerTestSupport

@testable import WorkerSync

/// The run's one clock, as a plain value: what each tick does, and when the next one falls.
@Suite(.hangLimit) struct RunClockScheduleTests {
    @Test func progressComesAtItsOwnPaceAndAQuietRunNeverTicks() {
        var clock = RunClockSchedule(start: 100, progressEvery: 1, deadline: nil)
        #expect(clock.nextTick(after: 100) == 101)
        #expect(clock.due(at: 100.5) == .init())
        #expect(clock.due(at: 101) == .init(progress: true))
        #expect(clock.nextTick(after: 101) == 102, "the next report a full interval after the last")
        #expect(clock.due(at: 101.25) == .init())
        #expect(clock.due(at: 102.1) == .init(progress: true))

        var quiet = RunClockSchedule(start: 0, progressEvery: nil, deadline: nil)
        #expect(quiet.due(at: 10) == .init(), "no progress asked for, none reported")
        #expect(quiet.nextTick(after: 0) == nil, "no progress and no deadline: no tick at all")
    }

    @Test func theDeadlineFallsOnceAtItsOwnTimeAndOutlivesTheDownloads() {
        var clock = RunClockSchedule(start: 0, progressEvery: 0.25, deadline: 0.6)
        #expect(clock.nextTick(after: 0.5) == 0.5, "a report is due")
        #expect(clock.due(at: 0.5) == .init(progress: true))
        #expect(clock.nextTick(after: 0.5) == 0.6, "a tick at the deadline itself, not at the next quarter")
        #expect(clock.due(at: 0.6) == .init(deadline: true))
        #expect(clock.due(at: 0.85) == .init(progress: true), "reached once")
        #expect(clock.nextTick(after: 0.85) == 1.1)

        let quiet = RunClockSchedule(start: 0, progressEvery: nil, deadline: 0.6)
        #expect(quiet.nextTick(after: 0) == 0.6, "only the deadline")

        // Uploads after the downloads still end at the deadline; nothing else ticks.
        var uploading = RunClockSchedule(start: 0, progressEvery: 0.25, deadline: 30)
        uploading.downloadsEnded()
        #expect(uploading.nextTick(after: 5) == 30)
        #expect(uploading.due(at: 30) == .init(deadline: true))
        #expect(uploading.nextTick(after: 30) == nil, "nothing left: the clock stops")

        var done = RunClockSchedule(start: 0, progressEvery: 0.25, deadline: nil)
        done.downloadsEnded()
        #expect(done.nextTick(after: 1) == nil)
    }
}
