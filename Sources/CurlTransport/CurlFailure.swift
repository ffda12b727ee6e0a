import CCurl
import FoundationEssentials
import Glibc
import WorkerFetch
import WorkerSupport

/// libcurl's result code and the socket's error number as a `FetchFailure`: a report reason and
/// a message in plain words (`FailureClassifier`'s), not libcurl's wording.
enum CurlFailure {
    /// `connected`: the connection was made (a timeout then is not the connect's); `crawl`: the
    /// request's own floor on pace (bytes a second, for seconds), when it has one.
    static func failure(
        _ code: CURLcode, osErrno: Int32, url: String, connected: Bool = false,
        crawl: (rate: Int, seconds: Double)? = nil
    ) -> FetchFailure {
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST:
            return FetchFailure(.connection, "host not found: \(Redact.short(FailureClassifier.host(of: url)))")
        case CURLE_COULDNT_CONNECT:
            if osErrno != 0 { return FetchFailure(.connection, FailureClassifier.socketProblem(osErrno)) }
            return FetchFailure(.connection, "cannot connect to \(Redact.short(FailureClassifier.host(of: url)))")
        case CURLE_OPERATION_TIMEDOUT:
            // libcurl keeps two timeouts for us: the connect's, and a request's floor on pace
            // (the read and entry timeouts are the engine's).
            if connected, let crawl {
                return FetchFailure(
                    .timeout, "too slow: under \(Units.formatBytes(Int64(crawl.rate)))/s for \(Units.formatDuration(crawl.seconds))")
            }
            return FetchFailure(.timeout, "connect timeout: no connection within --connect-timeout")
        case CURLE_PEER_FAILED_VERIFICATION:
            return FetchFailure(
                .connection, "TLS: the server's certificate is not trusted (a private CA can be added with --ca-cert)",
                detail: .tls(.untrustedCertificate))
        case CURLE_SSL_CONNECT_ERROR:
            return FetchFailure(.connection, "TLS handshake rejected", detail: .tls(.handshakeRejected))
        case CURLE_GOT_NOTHING:
            return FetchFailure(.connection, "the server closed the connection without an answer")
        case CURLE_PARTIAL_FILE:
            return FetchFailure(.connection, "truncated body: the connection closed before the declared length arrived")
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR:
            if osErrno != 0 { return FetchFailure(.connection, FailureClassifier.socketProblem(osErrno)) }
            return FetchFailure(.connection, "the server closed the connection")
        case CURLE_WEIRD_SERVER_REPLY, CURLE_BAD_FUNCTION_ARGUMENT:
            // libcurl 7.88 ends a response whose first header line is folded (begins with a space)
            // with BAD_FUNCTION_ARGUMENT: the server's answer, not our call, was wrong.
            return FetchFailure(.connection, "malformed response: the server's answer is not valid HTTP")
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL:
            return FetchFailure(.connection, "cannot request \(Redact.url(url)): not a valid http(s) URL")
        case CURLE_OUT_OF_MEMORY:
            return FetchFailure(.io, "out of memory")
        default:
            // libcurl's own words (it is loaded once a transfer has ended with its code).
            let words = Libcurl.loadProblem() == nil ? String(cString: worker_curl_easy_strerror(code)) : "libcurl code \(code.rawValue)"
            var message = "connection failed: " + words
            if osErrno != 0 { message += " (" + String(cString: strerror(osErrno)) + ")" }
            return FetchFailure(.connection, Redact.short(message, limit: 160))
        }
    }
}
