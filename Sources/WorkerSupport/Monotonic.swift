import FoundationEssentials
import Glibc

/// Seconds on the monotonic clock: deadlines, timers and rates that wall-clock changes never move.
public enum Monotonic {
    public static func now() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }
}
