import ArgumentParser
import FoundationEssentials
import Glibc
import ManifestSync

/// `--wait-lock`, the same for every command that writes: a duration (`30`, `30s`, `5m`).
struct LockOptions: ParsableArguments {
    @Option(name: .customLong("wait-lock"), help: "How long to wait for another run's lock before exit 3 (e.g. 30s; default: no limit).")
    var waitLock: String?

    func validate() throws {
        _ = try seconds()
    }

    /// The wait in seconds; nil waits without limit.
    func seconds() throws -> Double? {
        try waitLock.map { text in
            guard let seconds = Units.duration(text) else { throw ValidationError("--wait-lock: '\(text)' is not a duration (e.g. 30s)") }
            return seconds
        }
    }
}
