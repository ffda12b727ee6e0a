import FoundationEssentials
import Synchronization
import WorkerFetch

/// The run's progress as the consumer last recorded it, for the run's clock, which reports it
/// (with the bytes received since) while nothing finishes.
final class LiveProgress: Sendable {
    private let state: Mutex<SyncProgress>

    init(_ progress: SyncProgress) {
        state = Mutex(progress)
    }

    var value: SyncProgress {
        get { state.withLock { $0 } }
        set { state.withLock { $0 = newValue } }
    }

}

/// Work repeated on a fetch engine's timers until `stop()`.
public final class Ticker: Sendable {
    private let stopped = Mutex(false)

    public init() {}

    public func every(_ seconds: Double, on engine: any FetchEngine, _ work: @escaping @Sendable () -> Void) {
        engine.schedule(in: seconds) { [self] fired in
            guard fired, !stopped.withLock({ $0 }) else { return }
            work()
            every(seconds, on: engine, work)
        }
    }

    public func stop() {
        stopped.withLock { $0 = true }
    }
}
