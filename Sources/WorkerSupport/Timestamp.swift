import FoundationEssentials

/// ISO 8601 times for reports.
public enum Timestamp {
    public static func iso(_ seconds: Double) -> String {
        Date(timeIntervalSince1970: seconds).formatted(Date.ISO8601FormatStyle())
    }
}
