import FoundationEssentials
import Glibc
import Synchronization
import Testing
import WorkerSupport
import WorkerTestSupport

/// Work on threads of the program's own: in order, never more at once than the limit, every
/// piece run, and the threads gone once the queue is closed and drained.
@Suite(.hangLimit) struct ThreadQueueTests {
    private struct Counts {
        var running = 0
        var most = 0
        var order: [Int] = []
    }

    /// The threads of this process named `name` (Linux keeps a thread's name in its `comm`).
    private static func threads(named name: String) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter { task in
            let comm = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)
            return comm?.trimmingCharacters(in: .whitespacesAndNewlines) == name
        }.count
    }

    @Test func oneThreadRunsTheWorkInTheOrderItWasQueuedAndEndsWhenClosed() {
        let queue = ThreadQueue(name: "wq-serial", limit: 1)
        let counts = Mutex(Counts())
        let done = ThreadLatch()
        for number in 0..<200 {
            queue.async {
                counts.withLock { counts in
                    counts.running += 1
                    counts.most = max(counts.most, counts.running)
                    counts.order.append(number)
                }
                counts.withLock { $0.running -= 1 }
                if number == 199 { done.finish() }
            }
        }
        done.wait()
        let seen = counts.withLock { $0 }
        #expect(seen.order == Array(0..<200))
        #expect(seen.most == 1)
        #expect(Self.threads(named: "wq-serial") == 1)
        queue.close()
        var left = Self.threads(named: "wq-serial")
        for _ in 0..<200 where left > 0 {
            usleep(5_000)
            left = Self.threads(named: "wq-serial")
        }
        #expect(left == 0, "the thread ends once the queue is closed")
    }

    @Test func manyThreadsRunAtMostTheLimitAtOnceAndEveryPieceRuns() {
        let queue = ThreadQueue(name: "wq-pool", limit: 4)
        let counts = Mutex(Counts())
        let done = ThreadLatch()
        let total = 400
        for number in 0..<total {
            queue.async {
                counts.withLock { counts in
                    counts.running += 1
                    counts.most = max(counts.most, counts.running)
                }
                // Blocking work, as a local file's read is: the others go on meanwhile.
                usleep(200)
                let finished = counts.withLock { counts -> Int in
                    counts.running -= 1
                    counts.order.append(number)
                    return counts.order.count
                }
                if finished == total { done.finish() }
            }
        }
        done.wait()
        let seen = counts.withLock { $0 }
        #expect(seen.order.sorted() == Array(0..<total))
        #expect(seen.most > 1 && seen.most <= 4, "\(seen.most) at once")
        #expect(Self.threads(named: "wq-pool") <= 4)
        queue.close()
    }

    /// A flag set by many threads at once: exactly one of them is told it set it first.
    @Test func exactlyOneCallerSetsAFlagFirst() {
        let flag = Mutex(false)
        let firsts = Mutex(0)
        let queue = ThreadQueue(name: "wq-flag", limit: 8)
        let done = ThreadLatch()
        let left = Mutex(64)
        for _ in 0..<64 {
            queue.async {
                if flag.setFirst() { firsts.withLock { $0 += 1 } }
                if left.withLock({ left in
                    left -= 1; return left == 0
                }) {
                    done.finish()
                }
            }
        }
        done.wait()
        queue.close()
        #expect(firsts.withLock { $0 } == 1)
        #expect(flag.withLock { $0 })
        let again = flag.setFirst()
        #expect(!again, "set already")
    }
}
