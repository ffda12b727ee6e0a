import Dispatch
import Synchronization

/// Work run on threads of the program's own, in the order it was queued: up to `limit` threads,
/// started as work comes and more is waiting than threads are free, each taking the next piece
/// once it is done with one. For blocking work kept off the fetch engines' threads and off
/// Swift's cooperative pool (a local file's reads, a large body's hash). `close()` lets the
/// threads end once what was queued has run.
public final class ThreadQueue: Sendable {
    private struct State {
        var jobs: [@Sendable () -> Void] = []
        /// The first job not taken yet.
        var next = 0
        var started = 0
        /// Threads running a job.
        var busy = 0
        var closed = false

        var waiting: Int { jobs.count - next }
    }

    private let state = Mutex(State())
    /// One signal a job queued (and one a thread when closed): a thread that takes one finds
    /// a job, or the queue closed and empty.
    private let ready = DispatchSemaphore(value: 0)
    private let name: String
    private let limit: Int

    /// `name`: the threads' (at most 15 bytes, as Linux keeps).
    public init(name: String, limit: Int) {
        self.name = name
        self.limit = max(1, limit)
    }

    /// Queues `job`; a thread runs it after the jobs queued before it have been taken. When no
    /// thread can be started and none runs, `job` runs here, on the caller's thread.
    public func async(_ job: @escaping @Sendable () -> Void) {
        let start = state.withLock { state -> Bool in
            precondition(!state.closed, "ThreadQueue: work queued after close()")
            state.jobs.append(job)
            // More waiting than the threads not running a job can take at once.
            guard state.waiting > state.started - state.busy, state.started < limit else { return false }
            state.started += 1
            return true
        }
        ready.signal()
        guard start, !Threads.detach(name: name, { [self] in serve() }) else { return }
        // No thread could be started (a thread limit, no memory): with none running, the job
        // (and any before it) run here rather than wait forever.
        let alone = state.withLock { state -> Bool in
            state.started -= 1
            return state.started == 0
        }
        guard alone else { return }
        while case .job(let job) = take(alone: true) { job() }
    }

    /// Lets the threads end once every job queued has run.
    public func close() {
        let threads = state.withLock { state -> Int in
            state.closed = true
            return state.started
        }
        for _ in 0..<threads { ready.signal() }
    }

    private func serve() {
        while true {
            ready.wait()
            switch take(alone: false) {
            case .job(let job):
                job()
                state.withLock { $0.busy -= 1 }
            case .none:
                continue
            case .end:
                return
            }
        }
    }

    private enum Next {
        case job(@Sendable () -> Void)
        /// Nothing queued (a signal left by jobs run on their caller's thread).
        case none
        /// Closed, and nothing queued: the thread ends.
        case end
    }

    /// The next job (counted busy unless `alone`: run by its caller).
    private func take(alone: Bool) -> Next {
        state.withLock { state -> Next in
            guard state.next < state.jobs.count else {
                guard state.closed, !alone else { return .none }
                state.started -= 1
                return .end
            }
            let job = state.jobs[state.next]
            state.next += 1
            if state.next == state.jobs.count {
                state.jobs.removeAll(keepingCapacity: true)
                state.next = 0
            } else if state.next >= 64, state.next * 2 >= state.jobs.count {
                // Taken jobs are let go while work keeps coming.
                state.jobs.removeFirst(state.next)
                state.next = 0
            }
            if !alone { state.busy += 1 }
            return .job(job)
        }
    }
}
