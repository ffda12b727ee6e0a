/// Why an entry failed: the report's `reason` codes.
public enum FailureReason: String, Sendable, Codable, CaseIterable {
    case httpStatus = "http_status"
    case hashMismatch = "hash_mismatch"
    case timeout, connection
    case tooLarge = "too_large"
    case redirect, scheme, io, cancelled
}

/// A failed download attempt: a reason code, a message safe to print, and the HTTP status if any.
public struct FetchFailure: Error, Sendable, Equatable {
    public let reason: FailureReason
    public let message: String
    public let httpStatus: Int?
    /// Seconds the server asked us to wait (`Retry-After`).
    public let retryAfter: Double?
    /// A connection failure that another attempt cannot fix (an untrusted certificate).
    public let isPermanent: Bool
    /// A resumed body that went wrong (a hash mismatch, a refused range): the kept part is gone
    /// and another attempt starts from the first byte.
    public var restartsFromScratch = false

    public init(_ reason: FailureReason, _ message: String, httpStatus: Int? = nil, retryAfter: Double? = nil,
                isPermanent: Bool = false) {
        self.reason = reason
        self.message = message
        self.httpStatus = httpStatus
        self.retryAfter = retryAfter
        self.isPermanent = isPermanent
    }

    /// Transient failures are retried: connect errors, resets, truncated bodies, timeouts, 5xx, 408, 429.
    public var isTransient: Bool {
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
