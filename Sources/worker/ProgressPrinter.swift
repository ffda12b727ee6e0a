import Foundation
import ManifestSync
import Synchronization

/// The progress of downloads on stderr: on a terminal one line redrawn in place (at most ten
/// times a second); elsewhere (CI logs, journald) a plain line every five seconds.
final class ProgressPrinter: Sendable {
    enum Mode: String, CaseIterable { case auto, always, never }

    private let live: Bool
    private let interval: Double
    private let last = Mutex<Double>(0)

    /// nil when nothing should be printed.
    init?(mode: Mode, quiet: Bool) {
        let terminal = isatty(STDERR_FILENO) == 1
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
        let due = last.withLock { last -> Bool in
            guard now - last >= interval || progress.done == progress.total else { return false }
            last = now
            return true
        }
        guard due, progress.total > 0 else { return }
        let elapsed = max(Date().timeIntervalSince(progress.started), 0.001)
        let rate = Double(progress.bytes) / elapsed
        let remaining = progress.done > 0 ? elapsed / Double(progress.done) * Double(progress.total - progress.done) : 0
        let line = String(format: "%d/%d entries  %@  %@/s  ETA %@  failed %d", progress.done, progress.total,
                          Units.formatBytes(progress.bytes), Units.formatBytes(Int64(rate)),
                          Self.duration(remaining), progress.failed)
        if live {
            let end = progress.done == progress.total ? "\n" : ""
            FileHandle.standardError.write(Data(("\r\u{1B}[2K" + line + end).utf8))
        } else {
            FileHandle.standardError.write(Data(("progress: " + line + "\n").utf8))
        }
    }

    static func duration(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded())
        return whole >= 3600 ? "\(whole / 3600)h\(whole % 3600 / 60)m" : whole >= 60 ? "\(whole / 60)m\(whole % 60)s" : "\(whole)s"
    }
}
