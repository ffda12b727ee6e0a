/// How finished groups reach the queue's one consumer: an `AsyncSequence` of batches, so that a
/// cold sync of small files makes no thread hand-off per file (such hand-offs cost more CPU than
/// hashing the file), with back-pressure: while the consumer has `highWater` groups it has not
/// taken (it is committing), no new group starts.
extension DownloadQueue {
    /// The finished groups in batches, for the queue's one consumer: a batch once `wakeCount`
    /// groups are ready or nothing more runs, `flushDelay` after the first of fewer, and an empty
    /// one after `every` seconds without any (the consumer commits what it holds on time while
    /// long downloads go on) — the coordinator's rule (`RunCoordinator`). The sequence ends once
    /// every started group was handed over and no more will start. Cancelling the consuming task
    /// stops the queue: the downloads in flight end as `cancelled` and are handed over as usual.
    public func batches(every seconds: Double) -> Batches {
        Batches(queue: self, every: seconds)
    }

    public struct Batches: AsyncSequence, Sendable {
        public typealias Element = [Finished]
        let queue: DownloadQueue
        let every: Double

        public struct AsyncIterator: AsyncIteratorProtocol {
            let queue: DownloadQueue
            let every: Double

            public mutating func next() async -> [Finished]? {
                await queue.next(within: every)
            }
        }

        public func makeAsyncIterator() -> AsyncIterator {
            AsyncIterator(queue: queue, every: every)
        }
    }

    /// The consumer's wait: the groups finished since its last call; nil at the end.
    func next(within seconds: Double) async -> [Finished]? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<[Finished]?, Never>) in
                send(.consumerAsks(within: seconds), waiter: Waiter(continuation))
            }
        } onCancel: {
            stop()
        }
    }
}
