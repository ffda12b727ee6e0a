import Dispatch
import Synchronization
import WorkerSupport

/// Hashes a large body on a thread of its own while the fetch engine's thread receives and writes
/// it: for a body of a gigabyte the hash (about half a second of CPU a GiB here) no longer adds to
/// the download's time. Each chunk is copied; at most `depth` wait, and the receiver waits for a
/// slot beyond that, so memory stays bounded (depth × the chunk size). Small bodies are hashed in
/// line: a hand-off per file would cost more than the hash.
final class HashPipeline: Sendable {
    /// Updated on the queue's one thread only, one chunk at a time: the lock is never waited for.
    private let hasher: Mutex<BodyHasher>
    private let queue = ThreadQueue(name: "worker.hash", limit: 1)
    private let slots: DispatchSemaphore

    init(_ hasher: sending BodyHasher, depth: Int = 32) {
        self.hasher = Mutex(hasher)
        slots = DispatchSemaphore(value: 0)
        for _ in 0..<depth { slots.signal() }
    }

    /// The thread ends once the chunks queued have been hashed.
    deinit {
        queue.close()
    }

    /// Queues a copy of `bytes` to be hashed, after the ones before it.
    func update(_ bytes: UnsafeRawBufferPointer) {
        slots.wait()
        let chunk = [UInt8](bytes)
        queue.async { [self] in
            hasher.withLock { hasher in chunk.withUnsafeBytes { hasher.update($0) } }
            slots.signal()
        }
    }

    /// The hasher once every queued chunk is in it.
    func finish() -> BodyHasher {
        let hashed = ThreadLatch()
        queue.async { hashed.finish() }
        hashed.wait()
        return hasher.withLock { $0 }
    }
}
