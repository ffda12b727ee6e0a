import WorkerStore

/// What one HTTP exchange ended with, and what it said of its connection.
public struct ExchangeReply: Sendable {
    public let result: Result<ExchangeOutcome, FetchFailure>
    public let bytes: Int64
    /// The response came over HTTP/2.
    public let multiplexed: Bool
    /// The server closes the connection after this response.
    public let closesConnection: Bool

    public init(result: Result<ExchangeOutcome, FetchFailure>, bytes: Int64, multiplexed: Bool, closesConnection: Bool) {
        self.result = result
        self.bytes = bytes
        self.multiplexed = multiplexed
        self.closesConnection = closesConnection
    }
}

/// A closed temporary file whose bytes matched the expected hash.
public struct VerifiedFile: Sendable, Equatable {
    public let path: String
    public let sha256: String
    public let size: Int64
}

/// What one HTTP exchange's response asked for.
public enum ExchangeOutcome: Sendable {
    case body(VerifiedFile, etag: String?, lastModified: String?)
    case redirect(status: Int, location: String?)
    case status(Int, retryAfter: Double?)
    case notModified
    /// A status and one header the request asked about (`ResponseHandler.statusAndHeader`): the
    /// SHA-256 a bucket stores (`x-amz-checksum-sha256`, base64) for a HEAD in S3's checksum mode,
    /// the challenge (`www-authenticate`) of a registry that wants a token.
    case statusAndHeader(Int, value: String?)
}
