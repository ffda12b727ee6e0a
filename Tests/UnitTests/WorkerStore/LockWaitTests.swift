import Foundation
import Glibc
import Synchronization
import Testing
import WorkerTestSupport

@testable import WorkerStore
@testable import WorkerSupport

/// The wait for a `flock` another holder has: a thread blocked in flock(2), ended by the holder's
/// release, or given up at its limit, a stop request or cancellation, always leaving the
/// descriptor without a lock of its own when it gives up. (Two opens of one file conflict as two
/// processes do: flock belongs to the open file.)
@Suite(.hangLimit) struct LockWaitTests {
    private func open(_ path: String) throws -> Int32 {
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        try #require(fd >= 0)
        return fd
    }

    /// A lock file in a new folder, held (`operation`) through one open, and a second open to
    /// wait with.
    private func held(_ operation: Int32) throws -> (TemporaryDirectory, holder: Int32, waiter: Int32) {
        let directory = TemporaryDirectory()
        let holder = try open(directory.path + "/lock")
        try #require(flock(holder, operation | LOCK_NB) == 0)
        return (directory, holder, try open(directory.path + "/lock"))
    }

    @Test func theWaitEndsHeldWhenTheHolderLetsGo() async throws {
        let (directory, holder, waiter) = try held(LOCK_EX)
        defer { close(holder); close(waiter); withExtendedLifetime(directory) {} }
        let said = Mutex(0)
        let wait = Task {
            await LockWait.wait(
                fd: waiter, operation: LOCK_EX, limit: nil, stop: StopRequest(),
                notices: .init(first: 0, every: 60) { _ in said.withLock { $0 += 1 } })
        }
        // Waiting: said once, and not held yet.
        while said.withLock({ $0 }) == 0 { try await Task.sleep(nanoseconds: 5_000_000) }
        flock(holder, LOCK_UN)
        #expect(await wait.value == .held)
        // The waiter has it: the first holder cannot take it back now.
        #expect(flock(holder, LOCK_EX | LOCK_NB) != 0)
        #expect(said.withLock { $0 } == 1, "one notice: the next is due a minute later")
    }

    @Test func aLimitGivesUpAndLeavesNoLockBehind() async throws {
        let (directory, holder, waiter) = try held(LOCK_SH)
        defer { close(holder); close(waiter); withExtendedLifetime(directory) {} }
        let outcome = await LockWait.wait(fd: waiter, operation: LOCK_EX, limit: 0.2, stop: StopRequest())
        #expect(outcome == .gaveUp)
        // The holder lets go: nobody holds it (the waiting thread did not take it on its way out).
        flock(holder, LOCK_UN)
        let other = try open(directory.path + "/lock")
        defer { close(other) }
        #expect(flock(other, LOCK_EX | LOCK_NB) == 0)
    }

    @Test func aLongWaitIsSaidAgainAndAgain() async throws {
        let (directory, holder, waiter) = try held(LOCK_EX)
        defer { close(holder); close(waiter); withExtendedLifetime(directory) {} }
        let stop = StopRequest()
        let said = Said()
        let wait = Task {
            await LockWait.wait(
                fd: waiter, operation: LOCK_EX, limit: nil, stop: stop,
                notices: .init(first: 0, every: 0.05) { waited in said.add(waited) })
        }
        while said.times.count < 3 { try await Task.sleep(nanoseconds: 5_000_000) }
        stop.request("stopped")
        #expect(await wait.value == .gaveUp)
        let times = said.times
        #expect(times == times.sorted() && times[2] >= 0.1, "said at 0, 0.05, 0.1 s or later: \(times)")
    }

    @Test func aStopRequestOrACancelledTaskEndsAWaitWithoutLimit() async throws {
        let (directory, holder, waiter) = try held(LOCK_EX)
        defer { close(holder); close(waiter); withExtendedLifetime(directory) {} }

        let stop = StopRequest()
        let firstStarted = Waiting()
        let stopped = Task {
            await LockWait.wait(
                fd: waiter, operation: LOCK_SH, limit: nil, stop: stop,
                notices: .init(first: 0, every: 60) { _ in firstStarted.said() })
        }
        while !firstStarted.hasSaid { try await Task.sleep(nanoseconds: 5_000_000) }
        stop.request("the run was stopped by SIGTERM")
        #expect(await stopped.value == .gaveUp)

        let secondStarted = Waiting()
        let cancelled = Task {
            await LockWait.wait(
                fd: waiter, operation: LOCK_SH, limit: nil, stop: StopRequest(),
                notices: .init(first: 0, every: 60) { _ in secondStarted.said() })
        }
        while !secondStarted.hasSaid { try await Task.sleep(nanoseconds: 5_000_000) }
        cancelled.cancel()
        #expect(await cancelled.value == .gaveUp)

        // Already stopped, or no waiting allowed: given up without a thread.
        #expect(await LockWait.wait(fd: waiter, operation: LOCK_SH, limit: nil, stop: stop) == .gaveUp)
        #expect(await LockWait.wait(fd: waiter, operation: LOCK_SH, limit: 0, stop: StopRequest()) == .gaveUp)
    }

    /// When a wait said it was waiting.
    private final class Said: Sendable {
        private let list = Mutex<[Double]>([])
        func add(_ waited: Double) { list.withLock { $0.append(waited) } }
        var times: [Double] { list.withLock { $0 } }
    }

    /// Whether a wait has said it is waiting (its first notice).
    private final class Waiting: Sendable {
        private let flag = Atomic(false)
        func said() { flag.store(true, ordering: .releasing) }
        var hasSaid: Bool { flag.load(ordering: .acquiring) }
    }

    @Test func aBlockingWaitForACallerThatIsNotAsync() throws {
        let (directory, holder, waiter) = try held(LOCK_EX)
        defer { close(holder); close(waiter); withExtendedLifetime(directory) {} }
        #expect(!LockWait.blocking(fd: waiter, operation: LOCK_SH, upTo: 0.1))
        flock(holder, LOCK_UN)
        #expect(LockWait.blocking(fd: waiter, operation: LOCK_SH, upTo: 5))
        #expect(flock(holder, LOCK_EX | LOCK_NB) != 0, "the waiter holds it shared")
    }
}
