import ArgumentParser
import FoundationEssentials
import Glibc

/// `--wait-lock`, the same for every command that writes: a duration (`30`, `30s`, `5m`).
struct LockOptions: ParsableArguments {
    @Option(name: .customLong("wait-lock"), help: "How long to wait for another run's lock before exit 3 (e.g. 30s; default: no limit).")
    var waitLock: Seconds?

    /// The wait in seconds; nil waits without limit.
    func seconds() -> Double? {
        waitLock?.value
    }
}
