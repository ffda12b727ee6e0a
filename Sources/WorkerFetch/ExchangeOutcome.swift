import WorkerStore

/// What one HTTP exchange ended with, and what it said of its connection.
package struct ExchangeReply: Sendable {
    package let result: Result<ExchangeOutcome, FetchFailure>
    package let bytes: Int64
    /// The response came over HTTP/2.
    package let multiplexed: Bool
    /// The server closes the connection after this response.
    package let closesConnection: Bool

    package init(result: Result<ExchangeOutcome, FetchFailure>, bytes: Int64, multiplexed: Bool, closesConnection: Bool) {
        self.result = result
        self.bytes = bytes
        self.multiplexed = multiplexed
        self.closesConnection = closesConnection
    }
}

/// A closed temporary file whose bytes matched the expected hash.
package struct VerifiedFile: Sendable, Equatable {
    package let path: String
    package let sha256: String
    package let size: Int64
}

/// What one HTTP exchange's response asked for.
package enum ExchangeOutcome: Sendable {
    case body(VerifiedFile, etag: String?, lastModified: String?)
    case redirect(status: Int, location: String?)
    case status(Int, retryAfter: Double?)
    case notModified
    /// A status and one header the request asked about (`ResponseHandler.statusAndHeader`): the
    /// SHA-256 a bucket stores (`x-amz-checksum-sha256`, base64) for a HEAD in S3's checksum mode,
    /// the challenge (`www-authenticate`) of a registry that wants a token.
    case statusAndHeader(Int, value: String?)
}
