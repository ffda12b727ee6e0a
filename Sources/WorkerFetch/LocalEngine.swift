import Dispatch
import Synchronization
import WorkerStore
import WorkerSupport

/// A fetch engine without a transport, for a run whose downloads are all local files: a thread of
/// its own running what is queued, in order, and timers (the queue's waits, progress, the
/// deadline). It makes no transfer, so such a run never loads libcurl.
final class LocalEngine: FetchEngine {
    private struct Loop {
        var work: [@Sendable () -> Void] = []
        var timers: [Int: Timer] = [:]
        /// Timers cancelled before they were scheduled (ids are handed out first, for registering).
        var cancelledEarly = Set<Int>()
        /// Set by `shutdown`: what is queued runs, then the thread ends and this is called.
        var stopped: (@Sendable () -> Void)?
        /// Set once the thread has ended: later work is answered at once.
        var ended = false
        /// The last timer id handed out (`newTimerID`).
        var lastTimerID = 0
    }

    private struct Timer {
        let due: Double
        let work: @Sendable (Bool) -> Void
    }

    private let loop = Mutex(Loop())
    /// Signalled when work or a timer comes: the thread looks again.
    private let wake = DispatchSemaphore(value: 0)

    /// Fails when no thread can be started.
    init() throws(EngineStartFailure) {
        guard Threads.detach(name: "worker-local", { [self] in run() }) else {
            throw .resources("cannot start a thread for local files")
        }
    }

    var isCurrent: Bool {
        ThreadOwner.isCurrent(ObjectIdentifier(self))
    }

    func execute(_ work: @escaping @Sendable () -> Void) {
        let accepted = loop.withLock { loop -> Bool in
            guard !loop.ended else { return false }
            loop.work.append(work)
            return true
        }
        if accepted { wake.signal() } else { work() }
    }

    func newTimerID() -> Int {
        loop.withLock { loop in
            loop.lastTimerID += 1
            return loop.lastTimerID
        }
    }

    func schedule(_ id: Int, in seconds: Double, _ work: @escaping @Sendable (Bool) -> Void) {
        let due = Monotonic.now() + max(0, seconds)
        let added = loop.withLock { loop -> Bool in
            if loop.cancelledEarly.remove(id) != nil || loop.stopped != nil || loop.ended { return false }
            loop.timers[id] = Timer(due: due, work: work)
            return true
        }
        if added { wake.signal() } else { execute { work(false) } }
    }

    func cancelTimer(_ id: Int) {
        let work = loop.withLock { loop -> (@Sendable (Bool) -> Void)? in
            if let timer = loop.timers.removeValue(forKey: id) { return timer.work }
            loop.cancelledEarly.insert(id)
            return nil
        }
        if let work { execute { work(false) } }
    }

    /// Never asked for (no request of such a run goes over the network); ends as a failure.
    func transfer(
        _ request: TransferRequest, handler: consuming sending ResponseHandler,
        done: @escaping @Sendable (ExchangeReply) -> Void
    ) -> any EngineTransfer {
        NoTransfer(done: done)
    }

    func start(_ transfer: any EngineTransfer) {
        guard let transfer = transfer as? NoTransfer else { return }
        execute {
            transfer.done(
                ExchangeReply(
                    result: .failure(FetchFailure(.io, "this run has no network transport")),
                    bytes: 0, multiplexed: false, closesConnection: false))
        }
    }

    func abort(_ transfer: any EngineTransfer, _ failure: FetchFailure) {}

    /// Ends the pending timers as cancelled and returns once the thread has run what it holds.
    func shutdown() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let pending = loop.withLock { loop -> [@Sendable (Bool) -> Void]? in
                guard !loop.ended else { return nil }
                loop.stopped = { done.resume() }
                defer { loop.timers.removeAll() }
                return loop.timers.values.map(\.work)
            }
            guard let pending else { return done.resume() }
            for work in pending { execute { work(false) } }
            wake.signal()
        }
    }

    // MARK: - The engine's thread

    private func run() {
        ThreadOwner.enter(ObjectIdentifier(self))
        var work: [@Sendable () -> Void] = []
        while true {
            let now = Monotonic.now()
            var due: [@Sendable (Bool) -> Void] = []
            let (next, stopped) = loop.withLock { loop -> (Double?, (@Sendable () -> Void)?) in
                swap(&work, &loop.work)
                for (id, timer) in loop.timers where timer.due <= now {
                    due.append(timer.work)
                    loop.timers[id] = nil
                }
                if work.isEmpty, due.isEmpty, let stopped = loop.stopped {
                    loop.ended = true
                    return (nil, stopped)
                }
                return (loop.timers.values.map(\.due).min(), nil)
            }
            if let stopped {
                stopped()
                return
            }
            for job in work { job() }
            work.removeAll(keepingCapacity: true)
            for job in due { job(true) }
            guard due.isEmpty else { continue }
            if let next {
                _ = wake.wait(timeout: .now() + max(0, next - Monotonic.now()))
            } else {
                wake.wait()
            }
        }
    }

    private final class NoTransfer: EngineTransfer {
        let done: @Sendable (ExchangeReply) -> Void

        init(done: @escaping @Sendable (ExchangeReply) -> Void) {
            self.done = done
        }
    }
}
