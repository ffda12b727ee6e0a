import Glibc
import Synchronization
import WorkerFetch
import WorkerStore
import WorkerSupport

/// The facts of listed report rows by plan item (`order`): held in memory up to a batch, then
/// written to an unlinked file in `directory` at the item's place, and read back in order as the
/// report is written. A million-row report then keeps its rows' facts on disk, not in memory (the
/// memory cost of a facts row falls from ~120 bytes, with the array's growth and the sort, to the
/// 16 of its place in `ReportBuilder`). Without a directory, or once the file cannot be made or
/// written, facts stay in memory.
final class RowFactsFile: Sendable {
    /// One record: the object's 32 bytes, the size, the attempts, the source and which are there.
    static let recordSize = 48
    /// Facts held before they are written (one write per run of consecutive items).
    static let batch = 4096
    /// Records read at once as the report is read (about 64 KiB).
    static let window = 1365

    private struct State {
        var descriptor: Int32 = -1
        /// Facts not yet written, latest last.
        var pending: [(order: Int, facts: RowFacts)] = []
        /// Facts kept in memory (no file, or writing failed): these win over the file's.
        var memory: [Int: RowFacts] = [:]
        var inMemory: Bool
        /// The records read last: from item `windowStart`.
        var windowStart = -1
        var windowBytes: [UInt8] = []
    }

    private let directory: String?
    private let state: Mutex<State>

    init(directory: String?) {
        self.directory = directory
        state = Mutex(State(inMemory: directory == nil))
    }

    deinit {
        state.withLock { if $0.descriptor >= 0 { close($0.descriptor) } }
    }

    /// Records the facts of item `order` (replacing any it had).
    func put(_ facts: RowFacts, order: Int) {
        state.withLock { state in
            state.pending.append((order, facts))
            if state.pending.count >= Self.batch { flush(&state) }
        }
    }

    /// The facts last recorded for item `order` (empty facts if none was).
    func facts(order: Int) -> RowFacts {
        state.withLock { state in
            if !state.pending.isEmpty { flush(&state) }
            if let facts = state.memory[order] { return facts }
            guard state.descriptor >= 0 else { return RowFacts() }
            if state.windowStart < 0 || order < state.windowStart || order >= state.windowStart + Self.window {
                state.windowStart = order / Self.window * Self.window
                state.windowBytes = read(state.descriptor, from: state.windowStart)
            }
            let offset = (order - state.windowStart) * Self.recordSize
            guard offset + Self.recordSize <= state.windowBytes.count else { return RowFacts() }
            return state.windowBytes.withUnsafeBytes {
                Self.decode(UnsafeRawBufferPointer(rebasing: $0[offset..<offset + Self.recordSize]))
            }
        }
    }

    /// Writes the pending facts, each at its item's place, in runs of consecutive items.
    private func flush(_ state: inout State) {
        var pending: [(order: Int, facts: RowFacts)] = []
        swap(&pending, &state.pending)
        state.windowStart = -1
        if !state.inMemory, state.descriptor < 0 {
            state.descriptor = Self.makeFile(in: directory ?? "")
            state.inMemory = state.descriptor < 0
        }
        guard !state.inMemory else {
            for (order, facts) in pending { state.memory[order] = facts }
            return
        }
        // By item, the latest of an item's facts last (the sort is not stable: positions decide).
        let sorted = pending.indices.sorted { (pending[$0].order, $0) < (pending[$1].order, $1) }
        var run: [UInt8] = []
        var runStart = -1
        func write() -> Bool {
            defer { run.removeAll(keepingCapacity: true) }
            guard !run.isEmpty else { return true }
            return run.withUnsafeBytes { FileChunks.writeAll(state.descriptor, $0, at: runStart * Self.recordSize) }
        }
        for (place, index) in sorted.enumerated() {
            let (order, facts) = pending[index]
            if place + 1 < sorted.count, pending[sorted[place + 1]].order == order { continue }
            if runStart < 0 || order != runStart + run.count / Self.recordSize {
                guard write() else { return fallBack(&state, pending) }
                runStart = order
            }
            Self.encode(facts, into: &run)
        }
        if !write() { fallBack(&state, pending) }
    }

    /// Writing failed (a full disk): these facts, and all later ones, are kept in memory (the
    /// items written before stay readable from the file).
    private func fallBack(_ state: inout State, _ pending: [(order: Int, facts: RowFacts)]) {
        state.inMemory = true
        for (order, facts) in pending { state.memory[order] = facts }
    }

    private func read(_ descriptor: Int32, from item: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: Self.window * Self.recordSize)
        var done = 0
        while done < bytes.count {
            let got = bytes.withUnsafeMutableBytes {
                pread(descriptor, $0.baseAddress! + done, $0.count - done, off_t(item * Self.recordSize + done))
            }
            if got < 0, errno == EINTR { continue }
            guard got > 0 else { break }
            done += got
        }
        return Array(bytes.prefix(done))
    }

    /// A file in `directory`, unlinked at once (what a crash between the two leaves, a writer's
    /// sweep of `tmp/` removes), or -1.
    private static func makeFile(in directory: String) -> Int32 {
        var template = Array((directory + "/report-rows-XXXXXX").utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { return -1 }
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        return descriptor
    }

    private static let sources: [SourceKind] = [.origin, .local, .remote]

    private static func encode(_ facts: RowFacts, into bytes: inout [UInt8]) {
        func append<T: FixedWidthInteger>(_ value: T) {
            withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
        }
        let words = facts.object?.words ?? (0, 0, 0, 0)
        append(words.0); append(words.1); append(words.2); append(words.3)
        append(facts.size ?? 0)
        append(Int32(clamping: facts.attempts ?? 0))
        append(facts.source.flatMap { sources.firstIndex(of: $0) }.map { UInt8($0 + 1) } ?? 0)
        append(UInt8((facts.object != nil ? 1 : 0) | (facts.size != nil ? 2 : 0) | (facts.attempts != nil ? 4 : 0)))
        append(UInt16(0))
    }

    private static func decode(_ raw: UnsafeRawBufferPointer) -> RowFacts {
        func load<T: FixedWidthInteger>(_ offset: Int, as type: T.Type) -> T {
            T(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: T.self))
        }
        let flags = raw[45]
        let source = Int(raw[44])
        let words = (load(0, as: UInt64.self), load(8, as: UInt64.self), load(16, as: UInt64.self), load(24, as: UInt64.self))
        return RowFacts(
            object: flags & 1 != 0 ? ObjectName(words: words) : nil,
            size: flags & 2 != 0 ? load(32, as: Int64.self) : nil,
            attempts: flags & 4 != 0 ? Int(load(40, as: Int32.self)) : nil,
            source: source > 0 && source <= sources.count ? sources[source - 1] : nil)
    }
}
