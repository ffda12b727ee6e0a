import FoundationEssentials
import Glibc
import WorkerSupport

/// Plain words for how a transfer failed ("connection refused", not a library's wording; the
/// transport maps its own codes with these), and what a failure means for the origin's health.
public enum FailureClassifier {
    /// The host (and port) of `url`, for messages.
    public static func host(of url: String) -> String {
        URLComponents(string: url).map { components in
            (components.host ?? url) + (components.port.map { ":\($0)" } ?? "")
        } ?? url
    }

    /// Plain words for a socket error number.
    public static func socketProblem(_ code: Int32) -> String {
        switch code {
        case ECONNREFUSED: "connection refused"
        case ECONNRESET: "connection reset by the server"
        case ETIMEDOUT: "connection timed out"
        case EHOSTUNREACH: "host unreachable"
        case ENETUNREACH: "network unreachable"
        case EPIPE: "the server closed the connection"
        case ECONNABORTED: "connection aborted"
        default: "connection failed: \(String(cString: strerror(code)))"
        }
    }

    /// What a failed attempt says about its origin, or nil when it says nothing about the origin
    /// (a hash mismatch, a 404, a full disk: the origin answered, or the problem is ours).
    static func originProblem(_ failure: FetchFailure) -> String? {
        if failure.isPermanent { return nil }
        switch failure.reason {
        case .connection, .timeout:
            return failure.message
        case .httpStatus:
            guard let status = failure.httpStatus, status >= 500 || status == 429 else { return nil }
            return "HTTP \(status)"
        default:
            return nil
        }
    }

    /// `Retry-After`: seconds (digits only: RFC 9110's delay-seconds), or an HTTP date.
    static func parseRetryAfter(_ value: String) -> Double? {
        if let seconds = Checked.decimal(Text.trimmingSpaces(value)) { return Double(seconds) }
        return httpDate(value).map { $0 - Date().timeIntervalSince1970 }
    }

    /// An HTTP date (RFC 9110's IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`) as Unix time.
    static func httpDate(_ value: String) -> Double? {
        let parts = Text.trimmingSpaces(value).split(separator: " ")
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        guard parts.count == 6, parts[0].count == 4, parts[0].hasSuffix(","), parts[5] == "GMT",
            let day = Int(parts[1]), (1...31).contains(day), let month = months.firstIndex(of: String(parts[2])),
            let year = Int(parts[3]), year >= 1970
        else { return nil }
        let clock = parts[4].split(separator: ":")
        guard clock.count == 3, let hour = Int(clock[0]), let minute = Int(clock[1]), let second = Int(clock[2]),
            (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
        else { return nil }
        var fields = tm()
        fields.tm_year = Int32(year - 1900)
        fields.tm_mon = Int32(month)
        fields.tm_mday = Int32(day)
        fields.tm_hour = Int32(hour)
        fields.tm_min = Int32(minute)
        fields.tm_sec = Int32(second)
        return Double(timegm(&fields))
    }
}
