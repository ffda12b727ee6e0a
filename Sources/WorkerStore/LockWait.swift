import CWorkerSystem
import Glibc
import Synchronization
import WorkerSupport

/// A `flock` another process holds, waited for without looking again on a clock: a thread of its
/// own blocks in flock(2) (`worker_lock_wait.h`), so the wait ends the moment the holder lets go.
/// The waiter gives up at its limit, at a stop request or when its task is cancelled; the thread
/// is then interrupted and has let go of the descriptor before the wait returns.
enum LockWait {
    enum Outcome: Equatable {
        case held
        case gaveUp
        /// flock(2) failed with this errno (or no thread could be started).
        case failed(Int32)
    }

    /// Said while the wait goes on: first after `first` seconds, then every `every` seconds;
    /// `say` gets the seconds waited.
    struct Notices: Sendable {
        let first: Double
        let every: Double
        let say: @Sendable (Double) -> Void
    }

    /// Waits for `operation` (LOCK_EX or LOCK_SH) on `fd`, up to `limit` seconds (nil: without
    /// limit; 0: not at all), unless `stop` is requested or the task is cancelled first.
    static func wait(fd: Int32, operation: Int32, limit: Double?, stop: StopRequest, notices: Notices? = nil) async -> Outcome {
        if limit == 0 || stop.reason != nil || Task.isCancelled { return .gaveUp }
        let result = Result()
        guard let handle = Handle(fd: fd, operation: operation, result: result) else { return .failed(errno) }
        let stopToken = stop.watch { _ in handle.cancel() }
        let started = Monotonic.now()
        let clock = Task {
            var nextNotice = notices?.first
            while !Task.isCancelled {
                let waited = Monotonic.now() - started
                if let limit, waited >= limit {
                    handle.cancel()
                    return
                }
                if let notices, let due = nextNotice, waited >= due {
                    notices.say(waited)
                    nextNotice = due + notices.every
                }
                guard let next = [limit, nextNotice].compactMap({ $0 }).min() else { return }
                try? await Task.sleep(nanoseconds: UInt64(max(0, next - waited) * 1e9) + 1_000_000)
            }
        }
        let code = await withTaskCancellationHandler {
            await result.value()
        } onCancel: {
            handle.cancel()
        }
        clock.cancel()
        await clock.value
        stop.unwatch(stopToken)
        handle.free()
        switch code {
        case 0: return .held
        case ECANCELED: return .gaveUp
        default: return .failed(code)
        }
    }

    /// For a caller that is not async: waits up to `seconds` for `operation`, blocking the
    /// calling thread; whether the lock is held.
    static func blocking(fd: Int32, operation: Int32, upTo seconds: Double) -> Bool {
        guard let handle = Handle(fd: fd, operation: operation, result: Result()) else { return false }
        let ended = handle.waitUntilEnded(seconds: seconds)
        if !ended { handle.cancel() }
        handle.free()  // joins the thread: its result is in
        return handle.result.now == 0
    }

    /// What the waiting thread ended with, for the one task that awaits it.
    private final class Result: Sendable {
        private let state = Mutex<(code: Int32?, waiter: CheckedContinuation<Int32, Never>?)>((nil, nil))

        func finish(_ code: Int32) {
            let waiter = state.withLock { state -> CheckedContinuation<Int32, Never>? in
                state.code = code
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: code)
        }

        var now: Int32? { state.withLock { $0.code } }

        func value() async -> Int32 {
            await withCheckedContinuation { continuation in
                let code = state.withLock { state -> Int32? in
                    if state.code == nil { state.waiter = continuation }
                    return state.code
                }
                if let code { continuation.resume(returning: code) }
            }
        }
    }

    /// The C wait, touched under a lock so that a late `cancel` (a stop request's watcher runs
    /// outside the request's lock) never reaches a freed wait.
    private final class Handle: Sendable {
        let result: Result
        private let wait: Mutex<OpaquePointer?>

        init?(fd: Int32, operation: Int32, result: Result) {
            self.result = result
            let context = Unmanaged.passRetained(result).toOpaque()
            guard
                let pointer = worker_lock_wait_start(
                    fd, operation,
                    { context, code in
                        Unmanaged<Result>.fromOpaque(context!).takeRetainedValue().finish(code)
                    }, context)
            else {
                Unmanaged<Result>.fromOpaque(context).release()
                return nil
            }
            wait = Mutex(pointer)
        }

        func cancel() {
            wait.withLock { pointer in
                if let pointer { worker_lock_wait_cancel(pointer) }
            }
        }

        func waitUntilEnded(seconds: Double) -> Bool {
            wait.withLock { pointer in pointer.map { worker_lock_wait_for($0, seconds) != 0 } ?? true }
        }

        func free() {
            wait.withLock { pointer in
                if let pointer { worker_lock_wait_free(pointer) }
                pointer = nil
            }
        }
    }
}
