// Swift 6.3.1 (-O) hoists a class field's load out of a loop although a call in the loop writes
// it, when the write follows an inlined thread check (a precondition on an atomic) on the value
// reached through a struct's `let`: the callee's computed effects on `self` say "read" only.
// worker's `EngineBound.value` hit this (a release build's fetch engine never saw its stop), and
// is `@inline(never)` since.
//
//   swiftc -O -swift-version 6 docs/compiler/engine-bound-hoist.swift -o /tmp/hoist && /tmp/hoist
//
// prints "NEVER SAW STOP" with 6.3.1; "stopped after 1 turns" without `-O`, with the getter
// `@inline(never)`, or without the precondition.
import Glibc
import Synchronization

final class EngineThread: Sendable {
    private let id = Atomic<UInt>(0)
    func enter() { id.store(UInt(pthread_self()), ordering: .releasing) }
    var isCurrent: Bool { id.load(ordering: .acquiring) == UInt(pthread_self()) }
}

struct EngineBound<Value>: @unchecked Sendable {
    private let bound: Value
    private let thread: EngineThread
    init(_ value: sending Value, on thread: EngineThread) {
        bound = value
        self.thread = thread
    }
    var value: Value {
        precondition(thread.isCurrent, "off the engine's thread")
        return bound
    }
}

final class Engine: Sendable {
    final class Loop {
        var stopped = false
    }

    let thread = EngineThread()
    let loop: EngineBound<Loop>
    let inbox = Mutex<[Int]>([])

    init() { loop = EngineBound(Loop(), on: thread) }

    @inline(never) func apply(_ command: Int) {
        let loop = loop.value
        if command == 1 { loop.stopped = true }
    }

    func run() {
        let loop = loop.value
        var commands: [Int] = []
        for turn in 1...2000 {
            inbox.withLock { swap(&commands, &$0) }
            for command in commands { apply(command) }
            commands.removeAll()
            if loop.stopped {
                print("stopped after \(turn) turns")
                return
            }
        }
        print("NEVER SAW STOP")
    }
}

let engine = Engine()
engine.thread.enter()
engine.inbox.withLock { $0.append(1) }
engine.run()
