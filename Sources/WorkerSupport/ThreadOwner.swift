import CWorkerSystem

/// Which object a thread of the program's own works for (a fetch engine), known on that thread
/// alone: the thread says so first thing (`enter`), and a check compares the caller's own
/// thread-local value with the object — no thread reads what another wrote, so there is nothing
/// to order between threads.
public enum ThreadOwner {
    /// Called first thing on a thread that works for `owner` (and holds it) until the thread ends.
    public static func enter(_ owner: ObjectIdentifier) {
        worker_set_thread_owner(UInt(bitPattern: owner))
    }

    /// Whether the calling thread is the one that entered for `owner`.
    public static func isCurrent(_ owner: ObjectIdentifier) -> Bool {
        worker_thread_owner() == UInt(bitPattern: owner)
    }
}
