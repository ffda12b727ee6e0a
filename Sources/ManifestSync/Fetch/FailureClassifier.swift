import CCurl
import Foundation

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

    /// `Retry-After`: seconds, or an HTTP date.
    static func parseRetryAfter(_ value: String) -> Double? {
        if let seconds = Double(value.trimmingCharacters(in: .whitespaces)) { return seconds }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: value).map { $0.timeIntervalSinceNow }
    }
}
