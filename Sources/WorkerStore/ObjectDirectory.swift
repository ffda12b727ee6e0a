import FoundationEssentials
import Glibc
import Synchronization
import WorkerSupport

/// Answers "is this object present?" for many objects at once: one `fstatat` per object against
/// an open descriptor of its fan-out folder, instead of resolving the whole path each time.
/// Links are not followed; only regular files count.
public final class ObjectDirectory {
    private let objectsDirectory: String
    /// Descriptors of the 256 fan-out folders, opened on first use; -1 when it cannot be opened.
    private var folders = [Int32](repeating: -2, count: 256)
    /// The regular files of every fan-out folder, by the 32 bytes their names spell, when
    /// `preload()` listed them.
    private var listed: Set<ObjectName>?
    /// Sizes `preloadSizes` read, by row of the rows it was given (-1: not a regular file there).
    private var rowSizes: (rows: IndexRows, sizes: [Int64])?

    public init(objectsDirectory: String) {
        self.objectsDirectory = objectsDirectory
    }

    deinit {
        for fd in folders where fd >= 0 { close(fd) }
    }

    /// Lists every fan-out folder once (256 directory reads instead of one lookup per object):
    /// worth it when most of the cache is about to be checked. Only regular files are taken: as
    /// the listing says, or by `fstatat` where the file system does not say (`DT_UNKNOWN`: FUSE
    /// servers, XFS without ftype).
    public func preload() {
        var names = Set<ObjectName>()
        for slot in 0..<256 {
            guard let folder = opendir(objectsDirectory + "/" + Hex.encode([UInt8(slot)])) else { continue }
            defer { closedir(folder) }
            while let entry = readdir(folder) {
                let type = entry.pointee.d_type
                guard type == UInt8(DT_REG) || type == UInt8(DT_UNKNOWN) else { continue }
                let name = DirectoryEntry.withName(entry) { ObjectName(hex: $0) }
                guard let name else { continue }
                if type == UInt8(DT_UNKNOWN) {
                    var info = stat()
                    let found = withUnsafePointer(to: entry.pointee.d_name) { name in
                        name.withMemoryRebound(to: CChar.self, capacity: 256) { fstatat(dirfd(folder), $0, &info, AT_SYMLINK_NOFOLLOW) }
                    }
                    guard found == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
                }
                names.insert(name)
            }
        }
        listed = names
    }

    /// The listed objects no row names (nil when the folders were not listed): what an
    /// interrupted run or a hand left behind.
    func unreferenced(by rows: IndexRows) -> [String]? {
        guard let listed else { return nil }
        var named = Set<ObjectName>()
        named.reserveCapacity(rows.count)
        for position in rows.indices { named.insert(rows.row(position).objectName) }
        return listed.subtracting(named).map(\.hex)
    }

    /// Lists the folders unless that was done already.
    public func preloadIfNeeded() {
        if listed == nil { preload() }
    }

    /// Reads the sizes of the objects `rows` name, one `fstatat` each: done ahead, on the
    /// thread that reads the index while the manifests are parsed, so the plan's size check
    /// costs the run no time of its own. Kept by row (8 bytes each), for `size(of:)`. From
    /// `twoThreadsFrom` rows on they are read on two threads, half each: a stat is ~2 µs of the
    /// kernel's time here, the longest part of a warm run of a million entries, which would
    /// otherwise end alone on one core after the parse.
    public func preloadSizes(of rows: IndexRows, twoThreadsFrom: Int = 20_000) {
        let half = rows.count >= max(2, twoThreadsFrom) ? rows.count / 2 : rows.count
        if half < rows.count {
            for slot in 0..<256 { openFolder(slot) }
        }
        let second = half < rows.count ? Self.readSizesOnAThread(rows, half..<rows.count, folders) : nil
        var sizes = Self.readSizes(rows, 0..<half) { status($0, &$1) }
        if let second { sizes += second.wait() }
        rowSizes = (rows, sizes)
    }

    /// The sizes a second thread read, handed over when it ends.
    private final class SizesFromAThread: Sendable {
        private let latch = ThreadLatch()
        private let sizes = Mutex<[Int64]>([])

        func finish(_ read: [Int64]) {
            sizes.withLock { $0 = read }
            latch.finish()
        }

        func wait() -> [Int64] {
            latch.wait()
            return sizes.withLock { $0 }
        }
    }

    /// The sizes of `range`'s rows read on a thread of its own (every folder already opened),
    /// waited for with the returned value; read here when no thread can be started.
    private static func readSizesOnAThread(_ rows: IndexRows, _ range: Range<Int>, _ folders: [Int32]) -> SizesFromAThread {
        let result = SizesFromAThread()
        let read: @Sendable () -> Void = {
            result.finish(readSizes(rows, range) { status($0, in: folders, &$1) })
        }
        if !Threads.detach(name: "worker-sizes", read) { read() }
        return result
    }

    /// The sizes of `range`'s rows in order (-1: not a regular file), each found by `status`.
    private static func readSizes(_ rows: IndexRows, _ range: Range<Int>, status: (ObjectName, inout stat) -> Bool) -> [Int64] {
        var sizes = [Int64](repeating: -1, count: range.count)
        for position in range {
            var info = stat()
            if status(rows.row(position).objectName, &info), (info.st_mode & S_IFMT) == S_IFREG {
                sizes[position - range.lowerBound] = Int64(info.st_size)
            }
        }
        return sizes
    }

    /// Whether `preloadSizes` ran.
    public var hasSizes: Bool { rowSizes != nil }

    /// The size of the row's object file, or nil when it is not a regular file here: read ahead
    /// by `preloadSizes` when the row is one of the rows it was given, else a stat.
    public func size(of row: IndexRow) -> Int64? {
        if let rowSizes, row.isOne(of: rowSizes.rows) {
            let size = rowSizes.sizes[row.position]
            return size >= 0 ? size : nil
        }
        var info = stat()
        guard status(row.objectName, &info), (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int64(info.st_size)
    }

    /// The size of the object's file, or nil when it is not a regular file here (a listing
    /// tells names, not sizes: a stat).
    public func size(_ sha256: String) -> Int64? {
        var info = stat()
        guard status(sha256, &info), (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int64(info.st_size)
    }

    public func contains(_ sha256: String) -> Bool {
        if let listed {
            var hex = sha256
            if let name = hex.withUTF8({ ObjectName(hex: UnsafeRawBufferPointer($0)) }), listed.contains(name) { return true }
        }
        var info = stat()
        return status(sha256, &info) && (info.st_mode & S_IFMT) == S_IFREG
    }

    /// `fstatat` of the object in its fan-out folder's open descriptor (links not followed).
    private func status(_ sha256: String, _ info: inout stat) -> Bool {
        guard let name = ObjectName(hex: sha256) else { return false }
        return status(name, &info)
    }

    private func status(_ name: ObjectName, _ info: inout stat) -> Bool {
        openFolder(name.fanOut)
        return Self.status(name, in: folders, &info)
    }

    private func openFolder(_ slot: Int) {
        if folders[slot] == -2 {
            folders[slot] = open(objectsDirectory + "/" + Hex.encode([UInt8(slot)]), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        }
    }

    private static func status(_ name: ObjectName, in folders: [Int32], _ info: inout stat) -> Bool {
        let folder = folders[name.fanOut]
        guard folder >= 0 else { return false }
        return name.withCString { fstatat(folder, $0, &info, AT_SYMLINK_NOFOLLOW) } == 0
    }
}
