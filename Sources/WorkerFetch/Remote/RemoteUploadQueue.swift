import WorkerStore

/// What `RemoteUploads` keeps under its lock, as a value: the queue of objects to upload and where
/// it stands, the uploads in flight, whether offers are still open or the uploads were stopped,
/// who waits for the end, and whether the tier's collections were made.
struct RemoteUploadQueue {
    /// The tier's collections (`RemoteCacheSettings.collectionURLs`), made with MKCOL once a run
    /// when a PUT is refused with 404 or 409 (Apache's mod_dav, rclone: nginx makes them itself).
    /// The uploads refused meanwhile wait, and go again once they are made.
    enum Collections {
        case unknown
        case making(waiting: [(PendingUpload, Int)])
        case made
        case failed(String)
    }

    var queue: [PendingUpload] = []
    var next = 0
    var inFlight = 0
    var turn = 0
    var stopped = false
    /// Offers may still come (until `closeOffers`).
    var open = true
    var idle: [CheckedContinuation<Void, Never>] = []
    var collections = Collections.unknown
    /// Objects promised to the tier (the origin delivered what it missed), sent once a commit
    /// installs them.
    var promised: Set<String> = []

    var waiting: Int { queue.count - next }

    /// Takes what may start now, each with the engine (by number) it goes to.
    mutating func startable(limit: Int, engines: Int) -> [(PendingUpload, Int)] {
        var started: [(PendingUpload, Int)] = []
        while !stopped, inFlight < limit, next < queue.count {
            started.append((queue[next], turn % engines))
            next += 1
            inFlight += 1
            turn &+= 1
        }
        if next > 1024, next * 2 > queue.count {
            queue.removeFirst(next)
            next = 0
        }
        return started
    }
}

/// An object to upload to the tier (`RemoteUploads.offer`).
public struct PendingUpload: Sendable {
    let sha256: String
    let size: Int64
    /// Asks with `HEAD` first and sends only what the tier lacks (`worker push`).
    var checksFirst = false
    /// Sent again after the tier's collections were made: a 404 or 409 now is an error.
    var afterCollections = false
    /// Sent again after a transient failure (once).
    var retried = false

    public init(sha256: String, size: Int64, checksFirst: Bool = false, afterCollections: Bool = false) {
        self.sha256 = sha256
        self.size = size
        self.checksFirst = checksFirst
        self.afterCollections = afterCollections
    }
}
