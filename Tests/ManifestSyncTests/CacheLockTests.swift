import Foundation
@testable import ManifestSync
import Testing
import WorkerTestSupport

/// The lock held for a scope: released when the scope ends, however it ends.
@Suite struct CacheLockTests {
    @Test func theLockIsHeldForTheScopeOnly() async throws {
        let directory = TemporaryDirectory()
        let inside = try await CacheLock.withLock(directory: directory.path, wait: 0) { () async throws(CacheError) -> Bool in
            // While held, another taker with no wait is refused (exit 3 for a command).
            do {
                _ = try await CacheLock(directory: directory.path, wait: 0)
                return false
            } catch {
                if case CacheError.locked = error { return true }
                return false
            }
        }
        #expect(inside, "held inside the scope")
        let after = try await CacheLock(directory: directory.path, wait: 0)
        after.release()
    }

    @Test func aThrowingScopeReleasesTheLock() async throws {
        let directory = TemporaryDirectory()
        do {
            _ = try await CacheLock.withLock(directory: directory.path, wait: 0) { () async throws(CacheError) -> Int in
                throw CacheError.unusable(path: directory.path, reason: "test")
            }
            Issue.record("the scope's error reached the caller")
        } catch {
            if case CacheError.unusable = error {} else { Issue.record("\(error)") }
        }
        let after = try await CacheLock(directory: directory.path, wait: 0)
        after.release()
    }

    @Test func aCancelledWaitEnds() async throws {
        let directory = TemporaryDirectory()
        let held = try await CacheLock(directory: directory.path, wait: 0)
        let waiter = Task { () async -> Bool in
            do {
                _ = try await CacheLock(directory: directory.path, wait: nil)
                return false
            } catch {
                return true
            }
        }
        try await Task.sleep(nanoseconds: 200_000_000)
        waiter.cancel()
        #expect(await waiter.value, "a wait without limit still ends when its task is cancelled")
        held.release()
    }
}
