import Testing

@testable import ManifestSync

/// The download scheduler as a value: groups in, steps out, the time passed in. No I/O.
@Suite struct DownloadScheduleTests {
    let a = "http://a.test:80"
    let b = "http://b.test:80"

    static func started(_ steps: [DownloadSchedule.Step]) -> [Int] {
        steps.compactMap { if case .start(let group, _) = $0 { group } else { nil } }
    }

    @Test func runsAtMostJobsAtOnceInListOrder() {
        var schedule = DownloadSchedule(origins: [a, a, a, a, a], jobs: 2)
        #expect(Self.started(schedule.take(now: 0)) == [0, 1])
        #expect(schedule.running == 2)
        #expect(schedule.take(now: 0).isEmpty, "no room until one finishes")
        #expect(Self.started(schedule.finished(now: 1)) == [2])
        #expect(Self.started(schedule.finished(now: 1)) == [3])
        #expect(Self.started(schedule.finished(now: 1)) == [4])
        #expect(schedule.finished(now: 1).isEmpty && schedule.finished(now: 1).isEmpty)
        #expect(schedule.running == 0 && schedule.unstarted.isEmpty)
    }

    @Test func localFilesStartWhateverTheOrigins() {
        var breaker = OriginBreaker(down: [a])
        _ = breaker.admitEntry(a, now: 0)  // the probe is in flight
        var schedule = DownloadSchedule(origins: [a, nil, nil], jobs: 4, breaker: breaker)
        #expect(Self.started(schedule.take(now: 0)) == [1, 2], "group 0 is parked behind the probe")
        #expect(schedule.unstarted == [0])
    }

    @Test func anOriginDownBeforeIsProbedOnceThenReleased() {
        var schedule = DownloadSchedule(origins: [a, a, a, b], jobs: 8, breaker: OriginBreaker(down: [a]))
        #expect(Self.started(schedule.take(now: 0)) == [0, 3], "one probe of a; b is not held up")
        #expect(Set(schedule.unstarted) == [1, 2])
        let released = schedule.record(a, .healthy, now: 1)
        #expect(Self.started(released) == [1, 2], "the probe answered: the parked groups start")
        #expect(schedule.unstarted.isEmpty)
    }

    @Test func aProbeThatFailsRefusesTheParkedGroups() {
        var schedule = DownloadSchedule(origins: [a, a, a], jobs: 8, breaker: OriginBreaker(down: [a]))
        _ = schedule.take(now: 0)
        let steps = schedule.record(a, .unhealthy(problem: "connection refused", retryAfter: nil), now: 1)
        #expect(steps == [.refuse(group: 1, message: "origin unreachable: \(a) (connection refused); not tried"),
                          .refuse(group: 2, message: "origin unreachable: \(a) (connection refused); not tried")])
        #expect(schedule.running == 1, "refused groups never held a slot")
        #expect(schedule.admitRetry(a, now: 1) == .giveUp)
    }

    @Test func retryAfterDelaysTheOriginsNextGroupsOnly() {
        var schedule = DownloadSchedule(origins: [a, a, b], jobs: 1)
        #expect(Self.started(schedule.take(now: 0)) == [0])
        #expect(schedule.record(a, .unhealthy(problem: "HTTP 503", retryAfter: 5), now: 10).isEmpty)
        #expect(schedule.admitRetry(a, now: 11) == .wait(seconds: 4))
        #expect(schedule.finished(now: 11) == [.start(group: 1, delay: 4)])
        #expect(schedule.finished(now: 12) == [.start(group: 2, delay: 0)], "another origin does not wait")
    }

    @Test func entriesGivingUpOpenTheBreaker() {
        var schedule = DownloadSchedule(origins: Array(repeating: a, count: 8), jobs: 4)
        _ = schedule.take(now: 0)
        for _ in 0..<3 {
            _ = schedule.record(a, .unhealthy(problem: "HTTP 500", retryAfter: nil), now: 0)
            #expect(schedule.entryGaveUp(a, now: 0).isEmpty)
        }
        _ = schedule.record(a, .unhealthy(problem: "HTTP 500", retryAfter: nil), now: 0)
        _ = schedule.entryGaveUp(a, now: 0)
        let steps = schedule.finished(now: 0)
        #expect(steps == [.refuse(group: 4, message: "origin unreachable: \(a) (HTTP 500); not tried"),
                          .refuse(group: 5, message: "origin unreachable: \(a) (HTTP 500); not tried"),
                          .refuse(group: 6, message: "origin unreachable: \(a) (HTTP 500); not tried"),
                          .refuse(group: 7, message: "origin unreachable: \(a) (HTTP 500); not tried")])
        #expect(schedule.breaker.summaries.first?.notTried == 4)
    }

    @Test func aStopStartsNothingMoreAndListsTheRest() {
        var schedule = DownloadSchedule(origins: [a, a, a, a], jobs: 2)
        _ = schedule.take(now: 0)
        schedule.stop()
        #expect(schedule.finished(now: 1).isEmpty)
        #expect(schedule.finished(now: 1).isEmpty)
        #expect(schedule.unstarted == [2, 3])
        #expect(schedule.running == 0)
    }
}
