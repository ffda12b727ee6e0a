import FoundationEssentials

/// How far the downloads of a run are.
public struct SyncProgress: Sendable {
    /// Entries that needed the network, and how many of them are done.
    public var total: Int
    public var done: Int
    public var failed: Int
    /// Body bytes received so far, downloads in flight included.
    public var bytes: Int64
    public var started: Date
    /// `bytes` plus what the downloads still to come declared, once every download has started
    /// and said how long its body is; nil until then.
    public var bytesTotal: Int64? = nil

    public init(total: Int, done: Int, failed: Int, bytes: Int64, started: Date, bytesTotal: Int64? = nil) {
        self.total = total
        self.done = done
        self.failed = failed
        self.bytes = bytes
        self.started = started
        self.bytesTotal = bytesTotal
    }
}
