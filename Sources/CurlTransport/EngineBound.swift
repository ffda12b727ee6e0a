import WorkerSupport

/// The engine's thread, as the values bound to it know it: the thread enters for this object
/// once it runs (`ThreadOwner`, a thread-local of that thread).
final class EngineThread: Sendable {
    /// Called first thing on the engine's thread.
    func enter() {
        ThreadOwner.enter(ObjectIdentifier(self))
    }

    /// Whether the caller runs on the engine's thread.
    var isCurrent: Bool {
        ThreadOwner.isCurrent(ObjectIdentifier(self))
    }
}

/// A value that only the engine's thread may touch (NIO's `NIOLoopBound`): made on any thread
/// (sent in, so nothing else holds it) and handed around freely, but every access is checked to
/// be on that thread and traps otherwise — the promise is checked as the program runs instead of
/// written in a comment. libcurl's callbacks, the engine's timers and commands all run there.
struct EngineBound<Value>: Sendable {
    /// The one field the compiler cannot check, read only through `value`, which checks the thread.
    nonisolated(unsafe) private let bound: Value
    private let thread: EngineThread

    init(_ value: sending Value, on thread: EngineThread) {
        bound = value
        self.thread = thread
    }

    /// Never inlined: Swift 6.3.1's optimizer, seeing this check inlined before a write to a
    /// field of the value, counted the caller as only reading through `self` and hoisted the
    /// engine loop's read of that field out of the loop — a release build never saw its stop
    /// (`docs/compiler/engine-bound-hoist.swift` shows it in 60 lines).
    @inline(never)
    var value: Value {
        precondition(thread.isCurrent, "a value of the fetch engine's thread was touched on another thread")
        return bound
    }
}
