import Dispatch
import Synchronization
import WorkerSupport

/// Runs a `LibYAMLParser` on a thread of its own and hands its events over in batches. At most
/// `depth` batches wait at a time, so memory stays bounded whatever the size of the file;
/// batches come back from the reader to be filled again, so none is allocated per batch.
final class YAMLEventPipe: Sendable {
    static let depth = 8

    private struct Batches {
        var full: [YAMLEventBatch] = []
        var empty: [YAMLEventBatch] = []
        /// Set by the reader when it reads no further: the thread stops at its next batch.
        var stopped = false
    }

    private let batches = Mutex(Batches())
    /// Counts the batches in `full` (the reader waits on it).
    private let filled = DispatchSemaphore(value: 0)
    /// Counts the places left in `full` (the parsing thread waits on it). Made at 0 and given
    /// `depth` signals: libdispatch traps when a semaphore goes while below the value it was made
    /// with, as this one may when the reader stops early.
    private let room = DispatchSemaphore(value: 0)
    /// Signalled by the thread as it ends (at the stream's end, an error, or a stop).
    private let finished = DispatchSemaphore(value: 0)

    /// nil when no thread can be started: the parser went with it (closed), and the caller
    /// opens the file again to parse it on its own thread.
    init?(parser: sending LibYAMLParser, batchSize: Int) {
        for _ in 0..<Self.depth { room.signal() }
        guard Threads.detach(name: "worker.yaml", { [self] in run(parser, batchSize: batchSize) }) else { return nil }
    }

    /// The next batch; waits for it. `used` is the reader's previous batch, kept for refilling.
    /// Not called again once a batch has ended the stream (`isLast`).
    func take(returning used: YAMLEventBatch) -> YAMLEventBatch {
        batches.withLock { $0.empty.append(used) }
        filled.wait()
        let batch = batches.withLock { $0.full.removeFirst() }
        room.signal()
        return batch
    }

    /// Tells the thread to stop and waits until it has: the parser (and its file) are released.
    func stop() {
        batches.withLock { $0.stopped = true }
        // A thread waiting for room wakes, and sees the stop.
        room.signal()
        finished.wait()
    }

    private func run(_ parser: LibYAMLParser, batchSize: Int) {
        var batch = YAMLEventBatch()
        while true {
            batch.removeAll()
            parser.fill(&batch, upTo: batchSize)
            room.wait()
            let ends = batch.isLast
            let (handed, next) = batches.withLock { batches -> (Bool, YAMLEventBatch?) in
                guard !batches.stopped else { return (false, nil) }
                batches.full.append(batch)
                return (true, ends ? nil : batches.empty.popLast() ?? YAMLEventBatch())
            }
            if handed { filled.signal() }
            guard let next else {
                finished.signal()
                return
            }
            batch = next
        }
    }
}
