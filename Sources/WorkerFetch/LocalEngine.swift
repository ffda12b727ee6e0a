import Dispatch
import Glibc
import Synchronization

/// A fetch engine without a transport, for a run whose downloads are all local files: a serial
/// Dispatch queue with timers (the queue's waits, progress, the deadline). It makes no transfer,
/// so such a run never loads libcurl.
final class LocalEngine: FetchEngine {
    private struct Timers {
        var pending: [Int: @Sendable (Bool) -> Void] = [:]
        /// Timers cancelled before they were scheduled (ids are handed out first, for registering).
        var cancelledEarly = Set<Int>()
        var stopped = false
    }

    private let queue = DispatchQueue(label: "worker.local-engine")
    private let timers = Mutex(Timers())
    private let nextID = Atomic<Int>(0)
    /// The thread running the queue's work now (0 between work items).
    private let runningOn = Atomic<UInt>(0)

    var isCurrent: Bool {
        runningOn.load(ordering: .acquiring) == UInt(pthread_self())
    }

    func execute(_ work: @escaping @Sendable () -> Void) {
        queue.async { self.run(work) }
    }

    private func run(_ work: () -> Void) {
        runningOn.store(UInt(pthread_self()), ordering: .releasing)
        work()
        runningOn.store(0, ordering: .releasing)
    }

    func newTimerID() -> Int {
        nextID.add(1, ordering: .relaxed).newValue
    }

    func schedule(_ id: Int, in seconds: Double, _ work: @escaping @Sendable (Bool) -> Void) {
        let added = timers.withLock { timers -> Bool in
            if timers.cancelledEarly.remove(id) != nil || timers.stopped { return false }
            timers.pending[id] = work
            return true
        }
        guard added else {
            execute { work(false) }
            return
        }
        queue.asyncAfter(deadline: .now() + max(0, seconds)) {
            guard let due = self.timers.withLock({ $0.pending.removeValue(forKey: id) }) else { return }
            self.run { due(true) }
        }
    }

    func cancelTimer(_ id: Int) {
        let work = timers.withLock { timers -> (@Sendable (Bool) -> Void)? in
            if let work = timers.pending.removeValue(forKey: id) { return work }
            timers.cancelledEarly.insert(id)
            return nil
        }
        if let work { execute { work(false) } }
    }

    /// Never asked for (no request of such a run goes over the network); ends as a failure.
    func transfer(_ request: TransferRequest, handler: sending ResponseHandler,
                  done: @escaping @Sendable (ExchangeReply) -> Void) -> any EngineTransfer {
        NoTransfer(done: done)
    }

    func start(_ transfer: any EngineTransfer) {
        guard let transfer = transfer as? NoTransfer else { return }
        execute {
            transfer.done(ExchangeReply(result: .failure(FetchFailure(.io, "this run has no network transport")),
                                        bytes: 0, multiplexed: false, closesConnection: false))
        }
    }

    func abort(_ transfer: any EngineTransfer, _ failure: FetchFailure) {}

    /// Ends the pending timers as cancelled and returns once the queue has run what it holds.
    func shutdown() async {
        let pending = timers.withLock { timers in
            timers.stopped = true
            defer { timers.pending.removeAll() }
            return Array(timers.pending.values)
        }
        for work in pending { execute { work(false) } }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            queue.async { done.resume() }
        }
    }

    private final class NoTransfer: EngineTransfer {
        let done: @Sendable (ExchangeReply) -> Void

        init(done: @escaping @Sendable (ExchangeReply) -> Void) {
            self.done = done
        }
    }
}
