import FoundationEssentials

/// RFC 3339 times (`2026-12-31T23:59:59Z`, `…T23:59:59.5+01:00`) as Unix seconds, and back.
public enum RFC3339 {
    public static func parse(_ text: String) -> Double? {
        let upper = text.uppercased()
        for style in [Date.ISO8601FormatStyle(), Date.ISO8601FormatStyle(includingFractionalSeconds: true)] {
            if let date = try? style.parse(upper) { return date.timeIntervalSince1970 }
        }
        return nil
    }

    public static func format(_ seconds: Double) -> String {
        Date(timeIntervalSince1970: seconds.rounded(.down)).formatted(Date.ISO8601FormatStyle())
    }
}
