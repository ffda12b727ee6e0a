import CWorkerSystem
import Glibc
import Synchronization

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
/// end at once as they always did. A signal before the downloads start is held until they do,
/// and stops them as they start; one after they end ends the process once the run is done.
public enum StopSignals {
    private struct State {
        var descriptor: Int32 = -1
        var watching = false
        var onStop: (@Sendable (Int32) -> Void)?
        var notice: (@Sendable (String) -> Void)?
    }

    private static let state = Mutex(State())

    /// Handles SIGINT and SIGTERM from now on (not where they are ignored); `notice` is told at
    /// the first one, on a thread of the program's own.
    public static func enable(notice: @escaping @Sendable (String) -> Void) {
        state.withLock { state in
            state.notice = notice
            if state.descriptor < 0 { state.descriptor = worker_stop_signals_install() }
        }
    }

    /// The stop signal received, if any.
    public static var received: Int32? {
        let signal = worker_stop_signal()
        return signal == 0 ? nil : signal
    }

    /// "SIGINT" or "SIGTERM".
    static func name(_ signal: Int32) -> String {
        signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "signal \(signal)"
    }

    /// Until `unwatch`, a stop signal calls `onStop` with it (at once, if one came already). A
    /// no-op unless `enable` was called.
    static func watch(_ onStop: @escaping @Sendable (Int32) -> Void) {
        let descriptor = state.withLock { state -> Int32 in
            guard state.descriptor >= 0 else { return -1 }
            state.onStop = onStop
            defer { state.watching = true }
            return state.watching ? -1 : state.descriptor
        }
        // Without a thread (the system would not start one) a signal is still recorded, and
        // the lock waits and the end of the run still see it; only the downloads go on.
        if descriptor >= 0, !Threads.detach(name: "worker-signals", { waitForSignals(descriptor) }) {
            state.withLock { $0.watching = false }
        }
        if let signal = received { onStop(signal) }
    }

    static func unwatch() {
        state.withLock { $0.onStop = nil }
    }

    /// Ends the process by the stop signal received, if one was: after the command has written
    /// its outputs. Standard output and error are written unbuffered (`Console`): nothing waits.
    public static func endProcessIfStopped() {
        guard let signal = received else { return }
        worker_end_by_signal(signal)
    }

    /// The watching thread: one byte a first signal (the second ends the process in its handler).
    private static func waitForSignals(_ descriptor: Int32) {
        var byte: UInt8 = 0
        while true {
            let count = read(descriptor, &byte, 1)
            if count < 0, errno == EINTR { continue }
            guard count == 1 else { return }
            let signal = Int32(byte)
            let (onStop, notice) = state.withLock { ($0.onStop, $0.notice) }
            notice?("\(name(signal)): stopping — downloads in flight are cancelled, finished ones kept and the "
                    + "report written; \(name(signal)) again to stop at once")
            onStop?(signal)
        }
    }
}
