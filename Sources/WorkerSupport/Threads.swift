import CWorkerSystem
import Dispatch
import Glibc

/// Something a thread of the program's own finishes once, waited for asleep (a semaphore, not
/// a spin) by any number of waiters: a load or a share of work handed to another thread.
public final class ThreadLatch: Sendable {
    private let finished = DispatchSemaphore(value: 0)

    public init() {}

    public func finish() {
        finished.signal()
    }

    /// Returns once `finish` has been called (passing the signal on to the next waiter).
    public func wait() {
        finished.wait()
        finished.signal()
    }
}

public enum Threads {
    /// Runs `body` on a new detached thread named `name` (at most 15 bytes, as Linux keeps).
    /// False when the system cannot start one (a thread limit, no memory): the caller does
    /// without it, never traps. `body` is sent to the thread: what it holds is the thread's alone
    /// (and released with it when no thread starts).
    @discardableResult
    public static func detach(name: String, _ body: sending @escaping () -> Void) -> Bool {
        final class Start {
            let name: String
            let body: () -> Void
            init(name: String, body: sending @escaping () -> Void) {
                self.name = name
                self.body = body
            }
        }
        let start = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(
            &thread, nil,
            { context in
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
