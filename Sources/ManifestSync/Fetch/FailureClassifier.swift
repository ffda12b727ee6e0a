import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// Turns what the HTTP stack threw into a report reason and a message in plain words
/// ("connection refused", not the socket layer's description), and says what a failure means for
/// the origin's health.
enum FailureClassifier {
    static func classify(_ error: any Error) -> FetchFailure {
        if let failure = error as? FetchFailure { return failure }
        if error is CancellationError { return FetchFailure(.cancelled, "the run was cancelled") }
        if let client = error as? HTTPClientError {
            switch client {
            case .connectTimeout, .tlsHandshakeTimeout, .getConnectionFromPoolTimeout:
                return FetchFailure(.timeout, "connect timeout: no connection within --connect-timeout")
            case .readTimeout:
                return FetchFailure(.timeout, "read timeout: the server sent nothing for --read-timeout")
            case .deadlineExceeded:
                return FetchFailure(.timeout, "the entry took longer than --entry-timeout")
            case .cancelled:
                return FetchFailure(.cancelled, "the run was cancelled")
            case .remoteConnectionClosed:
                return FetchFailure(.connection, "the server closed the connection without an answer")
            default:
                return FetchFailure(.connection, "\(client.shortDescription)")
            }
        }
        if let connect = error as? NIOConnectionError {
            if connect.dnsAError != nil || connect.dnsAAAAError != nil {
                return FetchFailure(.connection, "host not found: \(Redact.short(connect.host))")
            }
            if let first = connect.connectionErrors.first?.error {
                return classify(first)
            }
            return FetchFailure(.connection, "cannot connect to \(Redact.short(connect.host)):\(connect.port)")
        }
        if let io = error as? IOError {
            return FetchFailure(.connection, socketProblem(io.errnoCode))
        }
        if let tls = error as? NIOSSLError {
            if case .handshakeFailed(let cause) = tls {
                return tlsFailure(cause)
            }
            return FetchFailure(.connection, "TLS error: \(Redact.short(String(describing: tls), limit: 120))")
        }
        if let parser = error as? HTTPParserError, parser == .invalidEOFState {
            return FetchFailure(.connection, "truncated body: the connection closed before the declared length arrived")
        }
        if let channel = error as? ChannelError {
            switch channel {
            case .connectTimeout: return FetchFailure(.timeout, "connect timeout: no connection within --connect-timeout")
            case .eof, .outputClosed, .alreadyClosed, .ioOnClosedChannel:
                return FetchFailure(.connection, "the server closed the connection")
            default: break
            }
        }
        return FetchFailure(.connection, Redact.short(String(describing: error), limit: 160))
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

    /// A failed handshake, told apart by BoringSSL's reason. NIOSSL keeps the packed error code
    /// private, so the reason is read from its rendering (`…:CERTIFICATE_VERIFY_FAILED at …`),
    /// here and nowhere else.
    static func tlsFailure(_ cause: BoringSSLError) -> FetchFailure {
        if "\(cause)".contains("CERTIFICATE_VERIFY_FAILED") {
            return FetchFailure(.connection, "TLS: the server's certificate is not trusted (a private CA can be added with --ca-cert)",
                                detail: .tls(.untrustedCertificate))
        }
        return FetchFailure(.connection, "TLS handshake rejected", detail: .tls(.handshakeRejected))
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
