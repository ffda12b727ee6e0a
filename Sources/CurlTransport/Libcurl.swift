import CCurl
import CWorkerSystem
import FoundationEssentials
import Glibc
import Synchronization
import WorkerFetch
import WorkerStore
import WorkerSupport

/// libcurl itself: loaded once per process when the first download needs it (the options every
/// handle is set up with: `CurlOptions`).
enum Libcurl {
    /// libcurl loaded (`worker_curl_load`: only a run that downloads pays for it) and its global
    /// state set up, once per process before any handle. Handles are told not to touch signals
    /// (CURLOPT_NOSIGNAL: they run on threads of their own), and libcurl then leaves SIGPIPE to
    /// the program: a server that closes a connection while we write to it (through OpenSSL,
    /// too) must fail that write with EPIPE, not kill the run.
    /// Nil once loaded; else why not (no libcurl.so.4, or one too old): then nothing of libcurl
    /// may be called.
    private static let initializeOnce: String? = {
        if let problem = worker_curl_load() { return String(cString: problem) }
        signal(SIGPIPE, SIG_IGN)
        worker_curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        return nil
    }()

    /// Why libcurl cannot be used (not installed, too old), or nil once it is loaded and set up.
    /// Loads it the first time (on the thread `loadAhead` started, or the caller's).
    static func loadProblem() -> String? {
        settle()
        return initializeOnce
    }

    /// Starts loading libcurl on a thread of its own (named worker-libcurl), once per process.
    static func loadAhead() {
        guard aheadStarted.setFirst() else { return }
        // No thread (a limit): libcurl is loaded when the first download needs it, as without it.
        if !Threads.detach(
            name: "worker-libcurl",
            {
                _ = initializeOnce; ahead.finish()
            })
        {
            ahead.finish()
            aheadStarted.withLock { $0 = false }
        }
    }

    /// Returns once a load `loadAhead` started is done. Waits asleep on a latch:
    /// waiting on the lazy value itself (Swift's once, a priority-inheriting futex on Linux) made
    /// the kernel spin the waiting thread while the loader ran, ~2 ms of CPU a run.
    static func settle() {
        if aheadStarted.withLock({ $0 }) { ahead.wait() }
    }

    private static let aheadStarted = Mutex(false)
    /// The end of the load `loadAhead` started.
    private static let ahead = ThreadLatch()
}
