import FoundationEssentials
import Glibc
import Synchronization
import WorkerSupport
import WorkerSync

/// The progress of downloads on stderr: on a terminal one line redrawn in place (at most ten
/// times a second); elsewhere (CI logs, journald) a plain line every five seconds, so that a
/// stall shows as lines that stop moving rather than as silence. It keeps no clock of its own:
/// the run's clock reports progress four times a second while downloads run, stalled or not
/// (`RunClock`; `worker push`'s ticker). With `--log-format json` the plain lines are JSON objects.
final class ProgressPrinter: Sendable {
    enum Mode: String, CaseIterable { case auto, always, never }

    private struct State {
        var latest: SyncProgress?
        /// The largest byte total shown: transfers a stop cuts short take their bytes out of
        /// the meter's total, which the line does not follow down.
        var shownTotal: Int64 = 0
        var lastLine = 0.0
        var stopped = false
    }

    private let live: Bool
    private let interval: Double
    /// Shared with the timer task (a Mutex cannot be copied into it).
    private final class Shared: Sendable {
        let mutex = Mutex(State())
    }

    private let shared = Shared()

    /// nil when nothing should be printed.
    init?(mode: Mode, quiet: Bool) {
        let terminal = isatty(STDERR_FILENO) == 1 && !Console.jsonLines
        switch mode {
        case .never: return nil
        case .auto where quiet: return nil
        case .auto, .always: break
        }
        live = terminal
        interval = terminal ? 0.1 : 5
    }

    func update(_ progress: SyncProgress) {
        let now = Date().timeIntervalSince1970
        let due = shared.mutex.withLock { state -> Bool in
            guard !state.stopped else { return false }
            // Off a terminal the first timed line comes `interval` after the downloads start.
            if state.latest == nil, !live { state.lastLine = now }
            var progress = progress
            if let total = progress.bytesTotal {
                state.shownTotal = max(state.shownTotal, total)
                progress.bytesTotal = state.shownTotal
            }
            state.latest = progress
            // On a terminal, nothing before the first byte or entry (the line would read all
            // zeros); in a log, a line every `interval` all the same: a wait shows as lines.
            guard progress.done > 0 || progress.bytes > 0 || !live else { return false }
            // A line at most every `interval`; the last one at once.
            guard progress.total > 0 else { return false }
            guard now - state.lastLine >= interval || progress.done == progress.total else { return false }
            state.lastLine = now
            return true
        }
        guard due, let progress = shared.mutex.withLock({ $0.latest }) else { return }
        if live {
            let end = progress.done == progress.total ? "\n" : ""
            Console.write(2, Data(("\r\u{1B}[2K" + Self.line(progress) + end).utf8))
        } else {
            Self.printPlain(progress)
        }
    }

    /// A line of its own: on a terminal it replaces the live line, which the next update draws
    /// again below it.
    func note(_ text: String) {
        guard live else { return Console.notice(text) }
        Console.write(2, Data(("\r\u{1B}[2K" + text + "\n").utf8))
    }

    /// No more lines (the run is reporting).
    func stop() {
        shared.mutex.withLock { $0.stopped = true }
    }

    private static func printPlain(_ progress: SyncProgress) {
        var fields = [
            "progress.done": "\(progress.done)", "progress.total": "\(progress.total)",
            "progress.failed": "\(progress.failed)", "progress.bytes": "\(progress.bytes)",
            "progress.bytes_per_second": "\(Int64(rate(progress)))",
        ]
        if let total = progress.bytesTotal { fields["progress.bytes_total"] = "\(total)" }
        Console.notice("progress: " + line(progress), fields: fields)
    }

    private static func rate(_ progress: SyncProgress) -> Double {
        Double(progress.bytes) / max(Date().timeIntervalSince(progress.started), 0.001)
    }

    /// `3/10 entries  12.0 MB of 30.0 MB  4.0 MB/s  ETA 5s  failed 0` (`of …` once every
    /// download has said how long it is). A run that counted no byte (local files only) shows
    /// entries only, not `0 B of 0 B`.
    static func line(_ progress: SyncProgress) -> String {
        let elapsed = max(Date().timeIntervalSince(progress.started), 0.001)
        guard progress.bytes > 0 || (progress.bytesTotal ?? 0) > 0 else {
            return "\(progress.done)/\(progress.total) entries  ETA \(eta(progress, elapsed: elapsed))  failed \(progress.failed)"
        }
        let bytes = Units.formatBytes(progress.bytes) + (progress.bytesTotal.map { " of " + Units.formatBytes($0) } ?? "")
        return "\(progress.done)/\(progress.total) entries  \(bytes)  "
            + "\(Units.formatBytes(Int64(rate(progress))))/s  ETA \(eta(progress, elapsed: elapsed))  failed \(progress.failed)"
    }

    /// The time left, once enough is done to say. With the total bytes known, by bytes at the
    /// current rate; else by entries: the first entries of a run are not a fair sample
    /// (connections open, retries wait) and overestimate wildly, so it shows `--` until a tenth
    /// of the entries, or 2 % and 10 s, are behind.
    static func eta(_ progress: SyncProgress, elapsed: Double) -> String {
        guard progress.done < progress.total else { return "0s" }
        if let total = progress.bytesTotal, progress.bytes > 0, elapsed >= 1 {
            return duration(Double(max(0, total - progress.bytes)) / (Double(progress.bytes) / elapsed))
        }
        let share = Double(progress.done) / Double(max(progress.total, 1))
        guard progress.done > 0, share >= 0.1 || (share >= 0.02 && elapsed >= 10) else { return "--" }
        return duration(elapsed / share * (1 - share))
    }

    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds < 1e8 else { return "--" }
        let whole = Int(seconds.rounded())
        return whole >= 3600 ? "\(whole / 3600)h\(whole % 3600 / 60)m" : whole >= 60 ? "\(whole / 60)m\(whole % 60)s" : "\(whole)s"
    }
}
