import FoundationEssentials
import Glibc

/// Parsers for the human units of the command line: durations (`30s`, `5m`, `7d`) and sizes
/// (`256MiB`, `1MB`, `1048576`).
public enum Units {
    /// Seconds in `text`: a number with an optional unit ms, s, m, h, d, w (plain numbers are seconds).
    public static func duration(_ text: String) -> Double? {
        let (number, unit) = split(text)
        guard let value = Double(number), value >= 0, value.isFinite else { return nil }
        let scale: Double? =
            switch unit.lowercased() {
            case "", "s", "sec", "secs", "second", "seconds": 1
            case "ms": 0.001
            case "m", "min", "mins", "minute", "minutes": 60
            case "h", "hr", "hour", "hours": 3600
            case "d", "day", "days": 86400
            case "w", "week", "weeks": 604_800
            default: nil
            }
        // Longer than a century is no duration a run can mean, and would overflow the
        // nanoseconds and milliseconds the waits are made of.
        guard let scale, value * scale <= maxDuration else { return nil }
        return value * scale
    }

    /// The longest duration an option takes: 100 years, in seconds.
    static let maxDuration = 3_155_760_000.0

    /// Bytes in `text`: a number with an optional unit B, KB/MB/GB/TB (powers of 1000) or
    /// KiB/MiB/GiB/TiB (powers of 1024); K, M, G, T alone are powers of 1024, as in rclone.
    public static func size(_ text: String) -> Int64? {
        let (number, unit) = split(text)
        guard let value = Double(number), value >= 0, value.isFinite else { return nil }
        let scale: Double? =
            switch unit.lowercased() {
            case "", "b": 1
            case "kb": 1e3
            case "mb": 1e6
            case "gb": 1e9
            case "tb": 1e12
            case "k", "kib": 1024
            case "m", "mib": 1_048_576
            case "g", "gib": 1_073_741_824
            case "t", "tib": 1_099_511_627_776
            default: nil
            }
        guard let scale, value * scale < 9e18 else { return nil }
        return Int64((value * scale).rounded())
    }

    /// `1.2 MB` style, powers of 1000.
    /// A transfer rate in bytes per second, in curl's `--limit-rate` forms: `500000`, `256K`,
    /// `1M`, `2G` (K = 1024), optionally with `B` or `/s` (`1MB/s`).
    public static func rate(_ text: String) -> Int64? {
        var rest = Text.trimmingSpaces(text)
        if rest.lowercased().hasSuffix("/s") { rest.removeLast(2) }
        if rest.hasSuffix("B") || rest.hasSuffix("b") { rest.removeLast() }
        var multiplier: Double = 1
        switch rest.last {
        case "k", "K": multiplier = 1024
        case "m", "M": multiplier = 1024 * 1024
        case "g", "G": multiplier = 1024 * 1024 * 1024
        default: break
        }
        if multiplier > 1 { rest.removeLast() }
        guard let number = Double(rest), number > 0, number.isFinite else { return nil }
        let bytes = number * multiplier
        return bytes >= 1 && bytes < 1e15 ? Int64(bytes) : nil
    }

    /// A duration as `--deadline` and friends take it: `45s`, `1m30s`, `2h5m`, `0.5s`.
    public static func formatDuration(_ seconds: Double) -> String {
        if seconds < 60 {
            return seconds == seconds.rounded() ? "\(Int(seconds))s" : Text.format("%g", seconds) + "s"
        }
        let whole = Int(seconds.rounded())
        if whole < 3600 { return whole % 60 == 0 ? "\(whole / 60)m" : "\(whole / 60)m\(whole % 60)s" }
        return whole % 3600 / 60 == 0 ? "\(whole / 3600)h" : "\(whole / 3600)h\(whole % 3600 / 60)m"
    }

    /// How long ago something was, in the duration's format to the whole second (`9s`, `3m5s`).
    public static func formatAge(_ seconds: Double) -> String {
        formatDuration(max(0, seconds.rounded()))
    }

    public static func formatBytes(_ bytes: Int64) -> String {
        let units = ["B", "KB", "MB", "GB", "TB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1000, unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        return unit == 0 ? "\(bytes) B" : Text.format("%.1f", value) + " " + units[unit]
    }

    private static func split(_ text: String) -> (Substring, Substring) {
        let trimmed = Text.trimmingSpaces(text)[...]
        let end = trimmed.firstIndex { !($0.isNumber || $0 == ".") } ?? trimmed.endIndex
        return (trimmed[..<end], trimmed[end...].drop { $0 == " " })
    }
}
