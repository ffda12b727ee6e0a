import Synchronization

/// How finished groups reach the queue's one consumer: in batches, so that a cold sync of small
/// files makes no thread hand-off per file (such hand-offs cost more CPU than hashing the file).
extension DownloadQueue {
    /// The groups finished since the last call; nil once every started group has finished and
    /// no more will start. Waits while nothing is ready. Cancelling the calling task stops the
    /// queue: the downloads in flight end as `cancelled` and are handed over as usual.
    package func next() async -> [Finished]? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<[Finished]?, Never>) in
                let answer: [Finished]?? = state.withLock { state in
                    if !state.ready.isEmpty {
                        defer { state.ready.removeAll(keepingCapacity: true) }
                        return .some(state.ready)
                    }
                    if state.schedule.running == 0 { return .some(nil) }
                    precondition(state.waiter == nil, "DownloadQueue has one consumer")
                    state.waiter = continuation
                    return .none
                }
                if let answer {
                    if answer == nil { stopHearingHeads() }
                    continuation.resume(returning: answer)
                }
            }
        } onCancel: {
            stop()
        }
    }

    /// What to do for a waiting consumer after a change: wake it, arm the flush timer, or nothing.
    struct HandOver {
        var wake: Wake?
        var armFlush = false

        func run(on engine: any FetchEngine, flush: @escaping @Sendable () -> Void) {
            if let (waiter, ready) = wake { waiter.resume(returning: ready) }
            if armFlush { engine.schedule(in: DownloadQueue.flushDelay) { _ in flush() } }
        }
    }

    /// The one rule for waking the consumer: once `wakeCount` groups are ready, or when nothing
    /// more is running; fewer wait for the short flush timer. (Waking it for every finished
    /// group would cost a thread hand-off per file.) Call under the lock.
    func handOverIfDue(_ state: inout State) -> HandOver {
        guard let waiter = state.waiter, !state.ready.isEmpty else { return HandOver() }
        if state.ready.count >= wakeCount || state.schedule.running == 0 {
            state.waiter = nil
            defer { state.ready = [] }
            return HandOver(wake: (waiter, state.ready))
        }
        guard !state.flushScheduled else { return HandOver() }
        state.flushScheduled = true
        return HandOver(armFlush: true)
    }

    /// Wakes a waiting consumer even when nothing finished (with what is ready, maybe nothing),
    /// so that it can commit what it holds on time while long downloads go on.
    package func wakeConsumer() {
        let wake = state.withLock { state -> Wake? in
            guard let waiter = state.waiter else { return nil }
            state.waiter = nil
            defer { state.ready = [] }
            return (waiter, state.ready)
        }
        if let (waiter, ready) = wake { waiter.resume(returning: ready) }
    }

    /// Hands what is ready to a waiting consumer (the timer behind `wakeCount`).
    func flush() {
        let wake = state.withLock { state -> Wake? in
            state.flushScheduled = false
            guard let waiter = state.waiter, !state.ready.isEmpty else { return nil }
            state.waiter = nil
            defer { state.ready = [] }
            return (waiter, state.ready)
        }
        if let (waiter, ready) = wake { waiter.resume(returning: ready) }
    }
}
