import CWorkerSystem

/// The process's table of file descriptors, sized once at start.
///
/// The kernel's first table holds 64 descriptors and doubles as more are opened; in a process
/// with more than one thread each doubling waits for an RCU grace period first (`expand_fdtable`),
/// several milliseconds on an idle machine. A sync opens its sockets and temporary files on its
/// fetch threads, so a small run paid one such wait (a third of its time; docs/ARCHITECTURE.md,
/// "Measurements behind the code") and a default `--jobs 50` run two. Grown while the program
/// has one thread, the same table costs nothing but a few kilobytes. (A parent that leaves high descriptors open, as a shell often
/// does, hides the cost: the table is inherited at its size.)
enum DescriptorTable {
    /// A run's connections and temporary files at the default `--jobs`, many times over.
    static let startingCapacity: Int32 = 1024

    /// Grows the table to hold `count` descriptors (at most the soft RLIMIT_NOFILE); called by
    /// `ProcessSetup.atStart`, before any thread starts.
    static func reserve(_ count: Int32 = startingCapacity) {
        worker_reserve_descriptors(count)
    }
}
