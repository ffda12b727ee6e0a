import FoundationEssentials
import Synchronization
import WorkerFetch

/// The run's progress as the consumer last recorded it, for a timer on a fetch engine that
/// reports it (with the bytes received since) while nothing finishes.
final class LiveProgress: Sendable {
    private let state: Mutex<SyncProgress>

    init(_ progress: SyncProgress) {
        state = Mutex(progress)
    }

    var value: SyncProgress {
        get { state.withLock { $0 } }
        set { state.withLock { $0 = newValue } }
    }

    /// Calls `report` every `seconds` on `engine`'s timers until `stop()`.
    func tick(every seconds: Double, on engine: any FetchEngine, _ report: @escaping @Sendable () -> Void) {
        ticker.every(seconds, on: engine, report)
    }

    private let ticker = Ticker()

    func stop() {
        ticker.stop()
    }
}

/// Work repeated on a fetch engine's timers until `stop()`.
package final class Ticker: Sendable {
    private let stopped = Atomic<Bool>(false)

    package init() {}

    package func every(_ seconds: Double, on engine: any FetchEngine, _ work: @escaping @Sendable () -> Void) {
        engine.schedule(in: seconds) { [self] fired in
            guard fired, !stopped.load(ordering: .relaxed) else { return }
            work()
            every(seconds, on: engine, work)
        }
    }

    package func stop() {
        stopped.store(true, ordering: .relaxed)
    }
}
