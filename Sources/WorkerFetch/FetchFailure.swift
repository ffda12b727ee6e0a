import Glibc
import WorkerManifest
import WorkerStore

/// Why an entry failed: the report's `reason` codes.
public enum FailureReason: String, Sendable, Codable, CaseIterable {
    case httpStatus = "http_status"
    case hashMismatch = "hash_mismatch"
    case timeout, connection
    case tooLarge = "too_large"
    case redirect, scheme, io, cancelled
}

/// What is known about a failure beyond its reason code, as data rather than words in the
/// message: what decides retries, the origin breaker and the report's fields reads this.
public enum FailureDetail: Sendable, Equatable {
    /// The body arrived whole but hashed to something else.
    case hashMismatch(expected: ContentHash, actual: ContentHash)
    /// The TLS handshake failed: the certificate is not trusted, or the server refused us.
    case tls(TLSProblem)
    /// The origin sent an encoded body (`Content-Encoding`) nobody asked for.
    case unrequestedEncoding(String)
    /// The cache's disk is full (ENOSPC, EDQUOT): no other download can be stored either.
    case noSpace
    /// The server of a protocol without statuses (SFTP) refused us, or has no such file.
    case denied(Denial)
}

/// What a server without HTTP statuses (SFTP) said no to: fixed by a person, not another try.
public enum Denial: Sendable, Equatable {
    /// The host's key is not in the known_hosts file.
    case unknownHostKey
    /// The host's key differs from the one the known_hosts file has for it.
    case changedHostKey
    /// The server refused every key (and the agent's).
    case loginRefused
    /// The path names no file.
    case noSuchFile
}

public enum TLSProblem: Sendable, Equatable {
    /// The chain does not lead to a trusted root: fixed by `--ca-cert`, not by another try.
    case untrustedCertificate
    /// The handshake failed for another reason (a plain-HTTP port, no common protocol).
    case handshakeRejected
}

/// A failed download attempt: a reason code, a message safe to print, and the HTTP status if any.
public struct FetchFailure: Error, Sendable, Equatable {
    public let reason: FailureReason
    public let message: String
    public let httpStatus: Int?
    /// Seconds the server asked us to wait (`Retry-After`).
    let retryAfter: Double?
    public let detail: FailureDetail?
    /// A resumed body that went wrong (a hash mismatch, a refused range): the kept part is gone
    /// and another attempt starts from the first byte.
    var restartsFromScratch = false

    public init(
        _ reason: FailureReason, _ message: String, httpStatus: Int? = nil, retryAfter: Double? = nil,
        detail: FailureDetail? = nil
    ) {
        self.reason = reason
        self.message = message
        self.httpStatus = httpStatus
        self.retryAfter = retryAfter
        self.detail = detail
    }

    static func hashMismatch(expected: ContentHash, actual: ContentHash) -> FetchFailure {
        FetchFailure(
            .hashMismatch, "expected \(expected) got \(actual)",
            detail: .hashMismatch(expected: expected, actual: actual))
    }

    /// The store could not take the body (a full disk, permissions): reported as `io`.
    /// A file of the store that could not be made or written: a full disk (ENOSPC, EDQUOT) in the
    /// words and with the detail every full disk has (the run stops asking), anything else with
    /// its error.
    init(storing error: SystemError) {
        if error.code == ENOSPC || error.code == EDQUOT {
            self.init(.io, "no space left on the device (\(error.operation) \(error.path))", detail: .noSpace)
        } else {
            self.init(.io, error.description)
        }
    }

    /// The hash the body had, for a hash mismatch.
    public var actualHash: ContentHash? {
        if case .hashMismatch(_, let actual) = detail { actual } else { nil }
    }

    /// A failure another attempt cannot fix although its reason is usually transient: an
    /// untrusted certificate, an encoding the server always adds.
    var isPermanent: Bool {
        switch detail {
        case .tls(.untrustedCertificate), .unrequestedEncoding, .denied: true
        default: false
        }
    }

    /// Transient failures are retried: connect errors, resets, truncated bodies, timeouts, 5xx, 408, 429.
    var isTransient: Bool {
        if isPermanent { return false }
        if restartsFromScratch { return true }
        return switch reason {
        case .connection, .timeout: true
        case .httpStatus:
            if let status = httpStatus { status >= 500 || status == 408 || status == 429 } else { false }
        default: false
        }
    }
}
