import CWorkerSystem
import Glibc
import Synchronization
import WorkerSupport

/// SIGINT and SIGTERM as a request to stop a run that downloads (Ctrl-C, `systemctl stop`, a
/// Kubernetes pod's end, a CI job cancelled): what has finished is kept.
///
/// The first signal stops the downloads as `--deadline` does: no more start, those in flight end
/// as `cancelled`, finished ones are committed to the index as usual, and the report, JUnit,
/// metrics and summary are written, with every entry not done failed as `cancelled` ("the run was
/// stopped by SIGTERM"). The process then ends by the signal itself (`endProcessIfStopped`): a
/// shell sees 130 or 143 and stops its script, systemd a unit stopped by SIGTERM. A second signal
/// ends the process at once, as before any handler: the cache is crash-safe either way, the stop
/// only keeps more.
///
/// Only commands that download ask for it (`enable`); others (`verify` of a large cache, say)
/// end at once as they always did. The first signal becomes the run's `StopRequest` (the library
/// never reads a signal): a wait for a lock ends, downloads that have not started stop as they
/// start, and one after they end ends the process once the run is done.
enum StopSignals {
    private struct State {
        var request: StopRequest?
        var notice: (@Sendable (String) -> Void)?
        /// The watching thread was started.
        var watching = false
    }

    private static let state = Mutex(State())

    /// Handles SIGINT and SIGTERM from now on (not where they are ignored) and returns the stop
    /// request the first one makes; `notice` is told, on a thread of the program's own. Called
    /// once per process (a command's run); a second call returns the same request.
    static func enable(notice: @escaping @Sendable (String) -> Void) -> StopRequest {
        let request = state.withLock { state -> StopRequest in
            if let request = state.request { return request }
            let request = StopRequest()
            state.request = request
            state.notice = notice
            _ = worker_stop_signals_install()
            return request
        }
        startWatching()
        return request
    }

    /// Starts the thread that waits for a stop signal, if it is not running: by `enable`, or
    /// before it when a thread made later would wait (one made while libcurl loads waits for the
    /// load to end, `WorkerCommand.runCommand`). It acts only on signals `enable` handles.
    /// Without a thread (the system would not start one) a signal is still recorded and the end
    /// of the run sees it (`endProcessIfStopped`); only the run is not stopped early.
    static func startWatching() {
        let descriptor = state.withLock { state -> Int32 in
            guard !state.watching else { return -1 }
            let descriptor = worker_stop_signals_pipe()
            state.watching = descriptor >= 0
            return descriptor
        }
        guard descriptor >= 0 else { return }
        if !Threads.detach(name: "worker-signals", { waitForSignals(descriptor) }) {
            state.withLock { $0.watching = false }
        }
    }

    /// The stop signal received, if any.
    static var received: Int32? {
        let signal = worker_stop_signal()
        return signal == 0 ? nil : signal
    }

    /// "SIGINT" or "SIGTERM".
    static func name(_ signal: Int32) -> String {
        signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "signal \(signal)"
    }

    /// Ends the process by the stop signal received, if one was: after the command has written
    /// its outputs. Standard output and error are written unbuffered (`Console`): nothing waits.
    static func endProcessIfStopped() {
        guard let signal = received else { return }
        worker_end_by_signal(signal)
    }

    /// The watching thread: one byte a first signal (the second ends the process in its handler),
    /// written only once `enable` has set the request and the notice.
    private static func waitForSignals(_ descriptor: Int32) {
        var byte: UInt8 = 0
        while true {
            let count = read(descriptor, &byte, 1)
            if count < 0, errno == EINTR { continue }
            guard count == 1 else { return }
            let signal = Int32(byte)
            let (request, notice) = state.withLock { ($0.request, $0.notice) }
            notice?(
                "\(name(signal)): stopping — downloads in flight are cancelled, finished ones kept and the "
                    + "report written; \(name(signal)) again to stop at once")
            request?.request("the run was stopped by \(name(signal))")
        }
    }
}
