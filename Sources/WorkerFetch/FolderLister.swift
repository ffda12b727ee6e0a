/// What `worker manifest URL` asks a listable kind's folder (an `s3://` prefix) besides
/// downloads, through the run's transport: every file below it, and a file's stored SHA-256 when
/// its origin keeps one. Made by the kind's access (`KindAccess.lister`).
public protocol FolderLister: Sendable {
    /// What the kind calls the files it lists, in a summary ("objects").
    var noun: String { get }
    /// Where a stored SHA-256 comes from, in a summary ("the bucket's SHA-256"); nil for an
    /// origin that stores none (every file is pinned by a download).
    var storedHashSource: String? { get }

    /// Every file below `folder` (a URL of the kind ending in `/`), in the origin's order.
    func list(_ folder: String) async -> Result<[ListedFile], FetchFailure>

    /// The SHA-256 the origin stores for `file` (lowercase hex), or nil when it stores none.
    func storedSHA256(of file: ListedFile) async -> Result<String?, FetchFailure>

    /// Ends its connections; call once, when done.
    func close() async
}

/// One file of a folder's listing, as the listing says it (what a later run compares to ask only
/// about files that changed).
public struct ListedFile: Sendable, Equatable {
    /// Its absolute URL.
    public var url: String
    /// Its path below the listed folder, as the origin names it.
    public var relative: String
    /// The origin's tag of its version (an ETag; empty when the origin gives none).
    public var etag: String
    public var size: Int64
    /// When it last changed, as the listing writes it.
    public var lastModified: String
    /// The origin stores its SHA-256 (`storedSHA256` can say it without a download).
    public var storesSHA256: Bool

    public init(url: String, relative: String, etag: String, size: Int64, lastModified: String, storesSHA256: Bool) {
        self.url = url
        self.relative = relative
        self.etag = etag
        self.size = size
        self.lastModified = lastModified
        self.storesSHA256 = storesSHA256
    }
}
