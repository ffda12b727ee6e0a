import CCurl
import FoundationEssentials
import Glibc

/// Turns how a transfer failed (libcurl's result code and the socket's error number) into a
/// report reason and a message in plain words ("connection refused", not libcurl's wording), and
/// says what a failure means for the origin's health.
enum FailureClassifier {
    static func classify(curl code: CURLcode, osErrno: Int32, url: String) -> FetchFailure {
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST:
            return FetchFailure(.connection, "host not found: \(Redact.short(host(of: url)))")
        case CURLE_COULDNT_CONNECT:
            if osErrno != 0 { return FetchFailure(.connection, socketProblem(osErrno)) }
            return FetchFailure(.connection, "cannot connect to \(Redact.short(host(of: url)))")
        case CURLE_OPERATION_TIMEDOUT:
            // The only timeout libcurl keeps for us: the read and entry timeouts are the engine's.
            return FetchFailure(.timeout, "connect timeout: no connection within --connect-timeout")
        case CURLE_PEER_FAILED_VERIFICATION:
            return FetchFailure(.connection, "TLS: the server's certificate is not trusted (a private CA can be added with --ca-cert)",
                                detail: .tls(.untrustedCertificate))
        case CURLE_SSL_CONNECT_ERROR:
            return FetchFailure(.connection, "TLS handshake rejected", detail: .tls(.handshakeRejected))
        case CURLE_GOT_NOTHING:
            return FetchFailure(.connection, "the server closed the connection without an answer")
        case CURLE_PARTIAL_FILE:
            return FetchFailure(.connection, "truncated body: the connection closed before the declared length arrived")
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR:
            if osErrno != 0 { return FetchFailure(.connection, socketProblem(osErrno)) }
            return FetchFailure(.connection, "the server closed the connection")
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL:
            return FetchFailure(.connection, "cannot request \(Redact.url(url)): not a valid http(s) URL")
        case CURLE_OUT_OF_MEMORY:
            return FetchFailure(.io, "out of memory")
        default:
            Libcurl.prepare()
            var message = "connection failed: " + String(cString: worker_curl_easy_strerror(code))
            if osErrno != 0 { message += " (" + String(cString: strerror(osErrno)) + ")" }
            return FetchFailure(.connection, Redact.short(message, limit: 160))
        }
    }

    /// The host (and port) of `url`, for messages.
    private static func host(of url: String) -> String {
        URLComponents(string: url).map { components in
            (components.host ?? url) + (components.port.map { ":\($0)" } ?? "")
        } ?? url
    }

    /// Plain words for a socket error number.
    static func socketProblem(_ code: Int32) -> String {
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
