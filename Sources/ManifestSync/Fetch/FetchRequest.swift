/// One download to make: where from, what it must hash to, what to send. A class: the steps of
/// a download (callbacks on the fetch engine's thread) share it instead of copying its strings.
final class FetchRequest: Sendable {
    let url: String
    let expected: ContentHash?
    let headers: [RequestHeader]
    /// For `file://` entries: the manifest folder the file must stay inside (symlinks resolved).
    let localRoot: String?
    /// The stored version's validators: sent as If-None-Match / If-Modified-Since, so the origin
    /// can answer 304 Not Modified without a body.
    let etag: String?
    let lastModified: String?
    /// The URL's origin (scheme, host, port) for the per-origin rules; nil for `file://`.
    let origin: String?

    init(url: String, expected: ContentHash?, headers: [RequestHeader], localRoot: String?,
         etag: String? = nil, lastModified: String? = nil) {
        self.url = url
        self.expected = expected
        self.headers = headers
        self.localRoot = localRoot
        self.etag = etag
        self.lastModified = lastModified
        origin = LocalFile.isLocal(url) ? nil : Fetcher.origin(of: url)
    }

    var isConditional: Bool { etag != nil || lastModified != nil }

    /// Sent with credentials (the manifest's headers, URL user info): what it fetches is as
    /// private as the origin.
    var carriesCredentials: Bool { !headers.isEmpty || CredentialFreeURL.hasUserInfo(url) }
}

/// What a successful download delivered.
enum Delivery: Sendable, Equatable {
    case body(FetchedBody)
    /// 304 to a conditional request: the stored version is current.
    case notModified
}

/// A body that was received completely and matched its hash, waiting in `tmp/` to be installed
/// as an object when its batch commits.
struct FetchedBody: Sendable, Equatable {
    let temporaryPath: String
    let sha256: String
    let size: Int64
    let etag: String?
    let lastModified: String?
}

/// The outcome of a download with its retries.
struct FetchResult: Sendable {
    let result: Result<Delivery, FetchFailure>
    let attempts: Int
    /// Body bytes received over all attempts.
    let bytesReceived: Int64
    /// The source that delivered or failed it; nil when none was asked.
    let source: SourceKind?
}
