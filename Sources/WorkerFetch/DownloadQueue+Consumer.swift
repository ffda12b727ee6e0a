import Synchronization
import WorkerSupport

/// How finished groups reach the queue's one consumer: an `AsyncSequence` of batches, so that a
/// cold sync of small files makes no thread hand-off per file (such hand-offs cost more CPU than
/// hashing the file), with back-pressure: while the consumer has `highWater` groups it has not
/// taken (it is committing), no new group starts.
extension DownloadQueue {
    /// The finished groups in batches, for the queue's one consumer: a batch once `wakeCount`
    /// groups are ready or nothing more runs, `flushDelay` after the first of fewer, and an empty
    /// one after `every` seconds without any (the consumer commits what it holds on time while
    /// long downloads go on). The sequence ends once every started group was handed over and no
    /// more will start. Cancelling the consuming task stops the queue: the downloads in flight
    /// end as `cancelled` and are handed over as usual.
    package func batches(every seconds: Double) -> Batches {
        Batches(queue: self, every: seconds)
    }

    package struct Batches: AsyncSequence, Sendable {
        package typealias Element = [Finished]
        let queue: DownloadQueue
        let every: Double

        package struct AsyncIterator: AsyncIteratorProtocol {
            let queue: DownloadQueue
            let every: Double

            package mutating func next() async -> [Finished]? {
                await queue.next(within: every)
            }
        }

        package func makeAsyncIterator() -> AsyncIterator {
            AsyncIterator(queue: queue, every: every)
        }
    }

    /// The consumer's wait: the groups finished since its last call; nil at the end. Its one
    /// timer (`Wait`) falls `seconds` after it began, or `flushDelay` after the first group ready.
    func next(within seconds: Double) async -> [Finished]? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<[Finished]?, Never>) in
                let now = Monotonic.now()
                var starts: [Launch] = []
                var wait: Wait?
                let answer: [Finished]?? = state.withLock { state in
                    // Taken: the groups held back start again.
                    if state.schedule.heldBack {
                        state.schedule.heldBack = false
                        starts = apply(state.schedule.take(now: now), to: &state)
                    }
                    if !state.ready.isEmpty, state.ready.count >= wakeCount || state.schedule.running == 0 {
                        defer { state.ready.removeAll(keepingCapacity: true) }
                        return .some(state.ready)
                    }
                    if state.ready.isEmpty, state.schedule.running == 0 { return .some(nil) }
                    precondition(state.waiter == nil, "DownloadQueue has one consumer")
                    state.waiter = continuation
                    wait = Wait(id: engine.newTimerID(), short: !state.ready.isEmpty)
                    state.wait = wait
                    return .none
                }
                perform(starts)
                // A timer the queue replaced or no longer needs meanwhile falls to no effect.
                if let wait { return arm(wait, in: wait.short ? Self.flushDelay : seconds) }
                guard let answer else { return }
                if answer == nil { stopHearingHeads() }
                continuation.resume(returning: answer)
            }
        } onCancel: {
            stop()
        }
    }

    /// The consumer's one timer: which, and whether it falls within `flushDelay`.
    struct Wait {
        let id: Int
        let short: Bool
    }

    /// What to do for a waiting consumer after a change: wake it, or make its timer fall within
    /// `flushDelay`; and the timer it no longer needs.
    struct HandOver {
        var wake: (CheckedContinuation<[Finished]?, Never>, [Finished])?
        var shorten: Wait?
        var cancel: Int?

        func run(_ queue: DownloadQueue) {
            if let cancel { queue.engine.cancelTimer(cancel) }
            if let (waiter, ready) = wake { waiter.resume(returning: ready) }
            if let shorten { queue.arm(shorten, in: DownloadQueue.flushDelay) }
        }
    }

    /// The one rule for waking the consumer: once `wakeCount` groups are ready, or when nothing
    /// more is running; fewer wait for the timer, made to fall within `flushDelay`. (Waking it for
    /// every finished group would cost a thread hand-off per file.) Call under the lock.
    func handOverIfDue(_ state: inout State) -> HandOver {
        guard let waiter = state.waiter, let wait = state.wait, !state.ready.isEmpty else { return HandOver() }
        if state.ready.count >= wakeCount || state.schedule.running == 0 {
            (state.waiter, state.wait) = (nil, nil)
            defer { state.ready = [] }
            return HandOver(wake: (waiter, state.ready), cancel: wait.id)
        }
        guard !wait.short else { return HandOver() }
        let shorter = Wait(id: engine.newTimerID(), short: true)
        state.wait = shorter
        return HandOver(shorten: shorter, cancel: wait.id)
    }

    func arm(_ wait: Wait, in seconds: Double) {
        engine.schedule(wait.id, in: seconds) { fired in
            guard fired else { return }
            self.waited(wait.id)
        }
    }

    /// The consumer's timer fell: it gets what is ready, maybe nothing.
    private func waited(_ id: Int) {
        let wake = state.withLock { state -> (CheckedContinuation<[Finished]?, Never>, [Finished])? in
            guard state.wait?.id == id, let waiter = state.waiter else { return nil }
            (state.waiter, state.wait) = (nil, nil)
            defer { state.ready = [] }
            return (waiter, state.ready)
        }
        if let (waiter, ready) = wake { waiter.resume(returning: ready) }
    }
}
