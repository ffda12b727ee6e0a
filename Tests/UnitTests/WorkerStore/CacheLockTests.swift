import Foundation
import Synchronization
import Testing
import WorkerTestSupport

@testable import WorkerStore
@testable import WorkerSupport

/// The lock held for a scope: released when the scope ends, however it ends.
@Suite(.hangLimit) struct CacheLockTests {
    @Test func theLockIsHeldForTheScopeOnly() async throws {
        let directory = TemporaryDirectory()
        let inside = try await CacheLock.withLock(directory: directory.path, wait: 0, context: RunContext()) {
            () async throws(CacheError) -> Bool in
            // While held, another taker with no wait is refused (exit 3 for a command).
            do {
                _ = try await CacheLock(directory: directory.path, wait: 0, context: RunContext())
                return false
            } catch {
                if case CacheError.locked = error { return true }
                return false
            }
        }
        #expect(inside, "held inside the scope")
        let after = try await CacheLock(directory: directory.path, wait: 0, context: RunContext())
        after.release()
    }

    @Test func aThrowingScopeReleasesTheLock() async throws {
        let directory = TemporaryDirectory()
        do {
            _ = try await CacheLock.withLock(directory: directory.path, wait: 0, context: RunContext()) {
                () async throws(CacheError) -> Int in
                throw CacheError.unusable(path: directory.path, reason: "test")
            }
            Issue.record("the scope's error reached the caller")
        } catch {
            if case CacheError.unusable = error {} else { Issue.record("\(error)") }
        }
        let after = try await CacheLock(directory: directory.path, wait: 0, context: RunContext())
        after.release()
    }

    @Test func aCancelledWaitEnds() async throws {
        let directory = TemporaryDirectory()
        let held = try await CacheLock(directory: directory.path, wait: 0, context: RunContext())
        // The wait's first notice says it is waiting: cancelled then, not after a guessed sleep.
        let waiting = Mutex(false)
        let context = RunContext(lockNotice: { _ in waiting.withLock { $0 = true } })
        let waiter = Task { () async -> Bool in
            do {
                _ = try await CacheLock(directory: directory.path, wait: nil, context: context)
                return false
            } catch {
                return true
            }
        }
        while !waiting.withLock({ $0 }) { try await Task.sleep(nanoseconds: 5_000_000) }
        waiter.cancel()
        #expect(await waiter.value, "a wait without limit still ends when its task is cancelled")
        held.release()
    }

    /// What stops a wait and what hears of it come with the run's context, not from the process.
    @Test func aWaitIsToldToTheContextAndAStopRequestEndsIt() async throws {
        let directory = TemporaryDirectory()
        let held = try await CacheLock(directory: directory.path, wait: 0, context: RunContext())
        let notices = Mutex<[String]>([])
        let stop = StopRequest()
        let context = RunContext(lockNotice: { message in notices.withLock { $0.append(message) } }, stop: stop)
        let waiting = Task { () async -> CacheError? in
            do throws(CacheError) {
                _ = try await CacheLock(directory: directory.path, wait: nil, context: context)
                return nil
            } catch {
                return error
            }
        }
        // The first notice comes at once; then the request ends the wait without a time limit.
        while notices.withLock({ $0.isEmpty }) { try await Task.sleep(nanoseconds: 10_000_000) }
        stop.request("the run was stopped by SIGTERM")
        let ended = await waiting.value
        guard case .locked = ended else {
            Issue.record("expected the wait to end as locked, got \(String(describing: ended))")
            return
        }
        #expect(notices.withLock { $0 }.first?.hasPrefix("waiting for the cache lock") == true)
        held.release()
    }

    @Test func aStopRequestIsToldOnceWithItsFirstReason() {
        let stop = StopRequest()
        let heard = Mutex<[String]>([])
        let token = stop.watch { reason in heard.withLock { $0.append(reason) } }
        stop.request("the run was stopped by SIGINT")
        stop.request("the run was stopped by SIGTERM")
        #expect(heard.withLock { $0 } == ["the run was stopped by SIGINT"])
        #expect(stop.reason == "the run was stopped by SIGINT")
        stop.unwatch(token)
        // A watcher that comes after the request hears it at once.
        _ = stop.watch { reason in heard.withLock { $0.append("late: " + reason) } }
        #expect(heard.withLock { $0 }.last == "late: the run was stopped by SIGINT")
    }
}
