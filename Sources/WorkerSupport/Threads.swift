import CWorkerSystem
import Glibc
import Synchronization

/// A mutex and a condition variable (pthread's), for the few places where a thread of the
/// program's own waits for another: the parsing thread and its reader.
/// (Not Foundation's NSCondition: worker links only FoundationEssentials.)
package final class ThreadCondition: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    package init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    package func lock() { pthread_mutex_lock(mutex) }
    package func unlock() { pthread_mutex_unlock(mutex) }
    /// Waits (the mutex held) until signalled; callers re-check their condition in a loop.
    package func wait() { pthread_cond_wait(condition, mutex) }
    package func signal() { pthread_cond_signal(condition) }
    package func broadcast() { pthread_cond_broadcast(condition) }
}

/// Something a thread of the program's own finishes once, waited for asleep (a condition
/// variable, not a spin): a load or a share of work handed to another thread.
package final class ThreadLatch: Sendable {
    private let condition = ThreadCondition()
    /// Set and read under `condition`'s mutex (no wake-up is lost); atomic, so that no promise is
    /// needed for it.
    private let finished = Atomic<Bool>(false)

    package init() {}

    package func finish() {
        condition.lock()
        finished.store(true, ordering: .relaxed)
        condition.broadcast()
        condition.unlock()
    }

    package func wait() {
        condition.lock()
        while !finished.load(ordering: .relaxed) { condition.wait() }
        condition.unlock()
    }
}

package enum Threads {
    /// Runs `body` on a new detached thread named `name` (at most 15 bytes, as Linux keeps).
    /// False when the system cannot start one (a thread limit, no memory): the caller does
    /// without it, never traps.
    @discardableResult
    package static func detach(name: String, _ body: @escaping @Sendable () -> Void) -> Bool {
        final class Start {
            let name: String
            let body: @Sendable () -> Void
            init(name: String, body: @escaping @Sendable () -> Void) {
                self.name = name
                self.body = body
            }
        }
        let start = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, { context in
            let start = Unmanaged<Start>.fromOpaque(context!).takeRetainedValue()
            worker_name_thread(start.name)
            start.body()
            return nil
        }, start)
        guard status == 0 else {
            Unmanaged<Start>.fromOpaque(start).release()
            return false
        }
        pthread_detach(thread)
        return true
    }
}
