import WorkerManifest
import Synchronization

/// What a run's transfers report while they go, before any of them ends: each response's head
/// (an origin's window grows when answers begin, so a few large files from a slow server run in
/// parallel from the start) and the body bytes received (progress counts bytes while one long
/// download is the only thing running). Called on the fetch engines' threads.
package final class TransferMeter: Sendable {
    /// A response's status line and headers arrived.
    package struct Head: Sendable, Equatable {
        package let origin: Origin?
        package let status: Int
        package let multiplexed: Bool
        package let closesConnection: Bool

        package init(origin: Origin?, status: Int, multiplexed: Bool, closesConnection: Bool) {
            self.origin = origin
            self.status = status
            self.multiplexed = multiplexed
            self.closesConnection = closesConnection
        }
    }

    private let received = Atomic<Int64>(0)
    /// Requests sent whose head has not arrived yet, and bodies in flight without a declared length.
    private let unknown = Atomic<Int>(0)
    /// Bytes declared by the heads of bodies in flight and not received yet.
    private let outstanding = Atomic<Int64>(0)
    /// The closure is kept inside a struct: a bare function value read out of a Mutex through
    /// `withLock { $0 }` came back wrapped in one more reabstraction thunk each time (the stored
    /// value is written back through the inout), so every head called through one more layer: a
    /// cold 10k sync spent 2 s of CPU in the chain.
    private struct Handler: Sendable {
        let call: @Sendable (Head) -> Void
    }

    private let headHandler = Mutex<Handler?>(nil)

    /// Body bytes received so far, over every attempt.
    package var bytes: Int64 { received.load(ordering: .relaxed) }

    /// The bytes still to come, when every transfer in flight has said how many (else nil).
    package var bytesOutstanding: Int64? {
        unknown.load(ordering: .relaxed) == 0 ? max(0, outstanding.load(ordering: .relaxed)) : nil
    }

    /// Who is told of each head (the download queue), until nil.
    package func onHead(_ handler: (@Sendable (Head) -> Void)?) {
        headHandler.withLock { $0 = handler.map(Handler.init(call:)) }
    }

    /// A request was sent: its length is unknown until its head.
    package func requestSent() {
        unknown.wrappingAdd(1, ordering: .relaxed)
    }

    /// Its head arrived: `declared` content bytes will follow (nil: unknown until the end).
    package func headArrived(_ head: Head, declared: Int64?) {
        if let declared {
            unknown.wrappingSubtract(1, ordering: .relaxed)
            outstanding.wrappingAdd(declared, ordering: .relaxed)
        }
        let handler = headHandler.withLock { $0 }
        handler?.call(head)
    }

    package func bodyReceived(_ count: Int) {
        received.wrappingAdd(Int64(count), ordering: .relaxed)
        outstanding.wrappingSubtract(Int64(count), ordering: .relaxed)
    }

    /// The exchange ended: what it declared and did not receive is no longer to come, and a
    /// length it never declared (no head, or no Content-Length) is no longer unknown.
    package func exchangeEnded(declared: Int64?, received count: Int64, headArrived: Bool) {
        if let declared, headArrived {
            outstanding.wrappingSubtract(max(0, declared - count), ordering: .relaxed)
        } else {
            unknown.wrappingSubtract(1, ordering: .relaxed)
        }
    }
}
