import Synchronization
import WorkerManifest

/// What a run's transfers report while they go, before any of them ends: each response's head
/// (an origin's window grows when answers begin, so a few large files from a slow server run in
/// parallel from the start) and the body bytes received (progress counts bytes while one long
/// download is the only thing running). Called on the fetch engines' threads.
public final class TransferMeter: Sendable {
    /// A response's status line and headers arrived.
    public struct Head: Sendable, Equatable {
        public let origin: Origin?
        public let status: Int
        public let multiplexed: Bool
        public let closesConnection: Bool

        public init(origin: Origin?, status: Int, multiplexed: Bool, closesConnection: Bool) {
            self.origin = origin
            self.status = status
            self.multiplexed = multiplexed
            self.closesConnection = closesConnection
        }
    }

    /// Byte counts wrap rather than trap: a length is what a server declared, and two of
    /// Int64's largest would not fit.
    private struct Counts {
        var received: Int64 = 0
        /// Requests sent whose head has not arrived yet, and bodies in flight without a declared length.
        var unknown = 0
        /// Bytes declared by the heads of bodies in flight and not received yet.
        var outstanding: Int64 = 0
    }

    private let counts = Mutex(Counts())
    /// The closure is kept inside a struct: a bare function value read out of a Mutex through
    /// `withLock { $0 }` came back wrapped in one more reabstraction thunk each time (the stored
    /// value is written back through the inout), so every head called through one more layer: a
    /// cold 10k sync spent 2 s of CPU in the chain.
    private struct Handler: Sendable {
        let call: @Sendable (Head) -> Void
    }

    private let headHandler = Mutex<Handler?>(nil)

    /// Body bytes received so far, over every attempt.
    public var bytes: Int64 { counts.withLock { $0.received } }

    /// The bytes still to come, when every transfer in flight has said how many (else nil).
    public var bytesOutstanding: Int64? {
        counts.withLock { $0.unknown == 0 ? max(0, $0.outstanding) : nil }
    }

    /// Who is told of each head (the download queue), until nil.
    func onHead(_ handler: (@Sendable (Head) -> Void)?) {
        headHandler.withLock { $0 = handler.map(Handler.init(call:)) }
    }

    /// A request was sent: its length is unknown until its head.
    public func requestSent() {
        counts.withLock { $0.unknown += 1 }
    }

    /// Its head arrived: `declared` content bytes will follow (nil: unknown until the end).
    public func headArrived(_ head: Head, declared: Int64?) {
        if let declared {
            counts.withLock { counts in
                counts.unknown -= 1
                counts.outstanding &+= declared
            }
        }
        let handler = headHandler.withLock { $0 }
        handler?.call(head)
    }

    public func bodyReceived(_ count: Int) {
        counts.withLock { counts in
            counts.received &+= Int64(count)
            counts.outstanding &-= Int64(count)
        }
    }

    /// The exchange ended: what it declared and did not receive is no longer to come, and a
    /// length it never declared (no head, or no Content-Length) is no longer unknown.
    public func exchangeEnded(declared: Int64?, received count: Int64, headArrived: Bool) {
        counts.withLock { counts in
            if let declared, headArrived {
                counts.outstanding &-= max(0, declared &- count)
            } else {
                counts.unknown -= 1
            }
        }
    }
}
