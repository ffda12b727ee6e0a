import Glibc
import Synchronization
import WorkerSupport

/// A writing run's place among the cache's writers: a shared `flock` on `CACHE/writers`, held
/// for the whole run (the kernel drops it when the process dies). Several runs hold it at once;
/// they meet only at `CacheLock`, which is held just to commit, prune and collect.
///
/// Whoever can take it exclusively is the only writer alive, and may do what would hurt a
/// running writer: delete `tmp/` (other runs' bodies in flight) and the marks of runs that
/// died (`ContentStore.uncleanMarks`). `clear` holds it exclusively for its whole work.
public final class WriterSlot: Sendable {
    private let fd: Int32
    /// Whether no other writer was running when this one joined (the slot was taken exclusively).
    public let alone: Bool
    private let released = Mutex(false)

    /// Joins the writers of the cache at `directory`. With `exclusive`, waits (up to `wait`
    /// seconds, nil: without limit) until no other writer runs; otherwise waits only while one
    /// holds it exclusively (a starting run tidying up, or `clear`), and is `alone` when it could
    /// have it exclusively at once (then `share()` when done tidying).
    public init(directory: String, exclusive: Bool = false, wait: Double?, stop: StopRequest) async throws(CacheError) {
        let path = directory + "/writers"
        let fd = try CacheLock.openOwnerOnly(path, flags: O_RDONLY)
        if flock(fd, LOCK_EX | LOCK_NB) == 0 {
            self.fd = fd
            alone = true
            return
        }
        let operation = exclusive ? LOCK_EX : LOCK_SH
        if exclusive || flock(fd, operation | LOCK_NB) != 0 {
            switch await LockWait.wait(fd: fd, operation: operation, limit: wait, stop: stop) {
            case .held:
                break
            case .gaveUp:
                close(fd)
                throw CacheError.locked(path: path, holder: exclusive ? "other runs are writing" : "a run is tidying the cache")
            case .failed(let code):
                errno = code
                let error = SystemError("lock", path)
                close(fd)
                throw .system(error)
            }
        }
        self.fd = fd
        alone = exclusive
    }

    /// Whether a writer runs on the cache now (a reader's question: nothing is created or held).
    public static func anyRunning(directory: String) -> Bool {
        let fd = open(directory + "/writers", O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return true }
        flock(fd, LOCK_UN)
        return false
    }

    /// From exclusive to shared, once the tidying is done, so other writers may join.
    public func share() {
        guard alone else { return }
        flock(fd, LOCK_SH)
    }

    /// Whether no other writer holds the slot now. Asked at the end of a run (it may give up this
    /// run's own shared hold when another writer runs: the run is ending).
    func isLast() -> Bool {
        flock(fd, LOCK_EX | LOCK_NB) == 0
    }

    public func release() {
        guard released.setFirst() else { return }
        flock(fd, LOCK_UN)
        close(fd)
    }

    deinit {
        release()
    }
}
