import FoundationEssentials
import Glibc
import WorkerSupport

/// Runs a `LibYAMLParser` on a thread of its own and hands its events over in batches. At most
/// `depth` batches wait at a time, so memory stays bounded whatever the size of the file;
/// batches come back from the reader to be filled again, so none is allocated per batch.
final class YAMLEventPipe: @unchecked Sendable {
    static let depth = 8

    /// Guards everything below.
    private let condition = ThreadCondition()
    private var full: [YAMLEventBatch] = []
    private var empty: [YAMLEventBatch] = []
    /// Set by the reader when it reads no further: the thread stops at its next batch.
    private var stopped = false
    /// Set by the thread as it ends (at the stream's end, an error, or `stopped`).
    private var finished = false
    /// Who waits on `condition` (each side wakes the other only when it waits).
    private var readerWaits = false
    private var parserWaits = false

    /// nil when no thread can be started: the caller parses on its own thread instead.
    init?(parser: LibYAMLParser, batchSize: Int) {
        guard Threads.detach(name: "worker.yaml", { [self] in run(parser, batchSize: batchSize) }) else { return nil }
    }

    /// The next batch; waits for it. `used` is the reader's previous batch, kept for refilling.
    /// Not called again once a batch has ended the stream (`isLast`).
    func take(returning used: consuming YAMLEventBatch) -> YAMLEventBatch {
        condition.lock()
        defer { condition.unlock() }
        empty.append(used)
        while full.isEmpty {
            readerWaits = true
            condition.wait()
            readerWaits = false
        }
        if parserWaits { condition.signal() }
        return full.removeFirst()
    }

    /// Tells the thread to stop and waits until it has: the parser (and its file) are released.
    func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        while !finished {
            condition.wait()
        }
        condition.unlock()
    }

    private func run(_ parser: LibYAMLParser, batchSize: Int) {
        var batch = YAMLEventBatch()
        while true {
            batch.removeAll()
            parser.fill(&batch, upTo: batchSize)
            condition.lock()
            while full.count >= Self.depth, !stopped {
                parserWaits = true
                condition.wait()
                parserWaits = false
            }
            let ends = batch.isLast || stopped
            if !stopped {
                full.append(batch)
                if readerWaits { condition.signal() }
            }
            if ends {
                finished = true
                condition.broadcast()
            } else {
                batch = empty.popLast() ?? YAMLEventBatch()
            }
            condition.unlock()
            if ends { return }
        }
    }
}
