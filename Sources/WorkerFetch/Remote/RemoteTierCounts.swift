/// What the shared tier did in one run (a sync's or `worker push`'s): its URL (redacted) and its
/// counts, kept by the tier and shown as the report's `remote_cache` object.
public struct RemoteTierCounts: Sendable, Codable, Equatable {
    public var url: String
    public var readOnly: Bool
    /// Bodies the tier had and that matched their hash (stored).
    public var hits = 0
    /// Lookups the tier answered 404 (or with a redirect, not followed).
    public var misses = 0
    /// Bodies that failed their hash or were cut: discarded, the origin asked.
    public var corrupt = 0
    /// Lookups that failed (refused, timeout, 5xx, …): the origin asked.
    public var errors = 0
    /// Lookups not made because the tier had been given up.
    public var skipped = 0
    public var uploads = 0
    public var uploadErrors = 0
    /// Uploads queued or in flight when the run was stopped (deadline, signal).
    public var uploadsNotDone = 0
    public var bytesDown: Int64 = 0
    public var bytesUp: Int64 = 0
    /// Why the run stopped asking the tier, if it did.
    public var givenUp: String?
    /// Objects `worker push` found on the tier already (not in the sync report).
    public var present = 0
    /// Bodies fetched with credentials, kept off the tier (no `--remote-cache-upload-private`).
    public var privateNotUploaded = 0

    public init(url: String, readOnly: Bool) {
        self.url = url
        self.readOnly = readOnly
    }

    enum CodingKeys: String, CodingKey {
        case url
        case readOnly = "read_only"
        case hits, misses, corrupt, errors, skipped, uploads
        case uploadErrors = "upload_errors"
        case uploadsNotDone = "uploads_not_done"
        case bytesDown = "bytes_down"
        case bytesUp = "bytes_up"
        case givenUp = "given_up"
        case privateNotUploaded = "private_not_uploaded"
    }
}
