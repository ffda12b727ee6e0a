/// The fetch engine's timers as a plain value: work due at a time, taken earliest first (ties in
/// the order they were added), removable by id before it is due. A binary heap of (due, id) with
/// the work beside it; a removed timer leaves its heap slot behind, skipped when it comes up, and
/// the heap is rebuilt from the pending timers when most of its slots are such leftovers (every
/// transfer removes its deadline long before it is due: a million-transfer run kept two million).
struct TimerQueue<Work> {
    private struct Slot {
        let due: Double
        let id: Int

        func precedes(_ other: Slot) -> Bool {
            due < other.due || (due == other.due && id < other.id)
        }
    }

    private var heap: [Slot] = []
    private var work: [Int: Work] = [:]

    /// Timers added and not yet taken or removed.
    var count: Int { work.count }

    /// Adds `work` to be due at `due`; `id` is the caller's and must be unique among pending timers.
    mutating func add(id: Int, due: Double, _ work: Work) {
        self.work[id] = work
        heap.append(Slot(due: due, id: id))
        siftUp(heap.count - 1)
    }

    /// Removes the pending timer `id` and returns its work; nil if it was taken or never added.
    mutating func remove(id: Int) -> Work? {
        let removed = work.removeValue(forKey: id)
        if heap.count > 64, heap.count > 2 * work.count { compact() }
        return removed
    }

    /// Heap slots held, pending timers' and removed ones' (tests: the leftovers are bounded).
    var slotCount: Int { heap.count }

    /// Keeps only the pending timers' slots, in heap order again (in place, linear time).
    private mutating func compact() {
        heap.removeAll { work[$0.id] == nil }
        for start in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(start) }
    }

    /// When the earliest pending timer is due; nil when none is pending.
    mutating func nextDue() -> Double? {
        dropRemovedHead()
        return heap.first?.due
    }

    /// Takes the timers due at `now`, earliest first.
    mutating func takeDue(now: Double) -> [Work] {
        var due: [Work] = []
        while let first = heap.first, first.due <= now {
            popHead()
            if let taken = work.removeValue(forKey: first.id) { due.append(taken) }
        }
        return due
    }

    private mutating func dropRemovedHead() {
        while let first = heap.first, work[first.id] == nil { popHead() }
    }

    private mutating func popHead() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        siftDown(0)
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].precedes(heap[parent]) else { return }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            var first = parent
            let left = 2 * parent + 1
            if left < heap.count, heap[left].precedes(heap[first]) { first = left }
            if left + 1 < heap.count, heap[left + 1].precedes(heap[first]) { first = left + 1 }
            guard first != parent else { return }
            heap.swapAt(parent, first)
            parent = first
        }
    }
}
