import WorkerFetch
import WorkerStore

/// What an entry's row is made from besides its plan item and status: the object it names, its
/// size, the attempts it took and where its bytes came from.
public struct RowFacts: Sendable, Equatable {
    public var object: ObjectName?
    /// -1: none.
    private var storedSize: Int64 = -1
    /// -1: none.
    private var storedAttempts: Int32 = -1
    public var source: SourceKind?

    public init(object: ObjectName? = nil, size: Int64? = nil, attempts: Int? = nil, source: SourceKind? = nil) {
        self.object = object
        storedSize = size ?? -1
        storedAttempts = attempts.map { Int32(clamping: $0) } ?? -1
        self.source = source
    }

    public var size: Int64? { storedSize >= 0 ? storedSize : nil }
    public var attempts: Int? { storedAttempts >= 0 ? Int(storedAttempts) : nil }
}
