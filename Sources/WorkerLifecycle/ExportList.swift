import FoundationEssentials
import Glibc
import WorkerManifest
import WorkerStore
import WorkerSupport

/// What an export wrote into a real folder (`.worker-export` there), so that the next export
/// removes what it wrote and no longer names, and nothing else: each file with the object it
/// holds and what it was on disk (device, inode, size). A listed file is removed only while it
/// is still what the export made — a hard link to its cache object, or the very file the list
/// recorded — reached from the folder's descriptor without following a link. The list itself is
/// trusted only when it is this user's own single-named file that no one else may write.
struct ExportList {
    /// The list of what an export wrote into its folder, in that folder.
    static let fileName = ".worker-export"

    /// One file an export wrote.
    struct Item: Equatable {
        let name: String
        /// The cache object it holds (its SHA-256).
        let object: String
        let device: UInt64
        let inode: UInt64
        let size: Int64

        init(name: String, object: String, _ info: stat) {
            self.init(name: name, object: object, device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size))
        }

        init(name: String, object: String, device: UInt64, inode: UInt64, size: Int64) {
            self.name = name
            self.object = object
            self.device = device
            self.inode = inode
            self.size = size
        }
    }

    let folder: FolderHandle

    /// The first line of a list that records what each file was; a list without it (written
    /// before) names files only, which are never removed: nothing proves they are still the export's.
    static let header = "worker-export 2"

    /// What the last export wrote (nothing without a list, or a list another user could have
    /// written or this program cannot read).
    func read() -> [Item] {
        let fd = openat(folder.fd, Self.fileName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_nlink == 1, info.st_uid == geteuid(),
            info.st_mode & 0o022 == 0, info.st_size < 1 << 30
        else { return [] }
        var bytes: [UInt8] = []
        let read = FileChunks.read(fd, path: folder.shown(Self.fileName), unreadable: { _ in CancellationError() }) { chunk in
            bytes.append(contentsOf: chunk)
            return nil
        }
        guard case .success = read else { return [] }
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n")
        guard lines.first == Substring(Self.header) else { return [] }
        return lines.dropFirst().compactMap(Self.item)
    }

    /// `DEVICE INODE SIZE OBJECT NAME` (the name last: it may hold spaces).
    private static func item(_ line: Substring) -> Item? {
        let fields = line.split(separator: " ", maxSplits: 4, omittingEmptySubsequences: false)
        guard fields.count == 5, let device = UInt64(fields[0]), let inode = UInt64(fields[1]), let size = Int64(fields[2]),
            Hex.isLowercaseHex(String(fields[3]), length: 64)
        else { return nil }
        let name = String(fields[4])
        guard TreePath.problem(name) == nil, name != Self.fileName else { return nil }
        return Item(name: name, object: String(fields[3]), device: device, inode: inode, size: size)
    }

    /// Writes the list (a temporary name in the folder, then a rename over the old list).
    func write(_ items: [Item]) throws(CacheError) {
        var text = Self.header + "\n"
        for item in items { text += "\(item.device) \(item.inode) \(item.size) \(item.object) \(item.name)\n" }
        let temporary = "." + Self.fileName + ".\(getpid()).tmp"
        let shown = folder.shown(Self.fileName)
        unlinkat(folder.fd, temporary, 0)
        let fd = openat(folder.fd, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .output(path: shown, reason: String(cString: strerror(errno))) }
        let written =
            text.utf8.withContiguousStorageIfAvailable { FileChunks.writeAll(fd, UnsafeRawBufferPointer($0)) }
            ?? Array(text.utf8).withUnsafeBytes { FileChunks.writeAll(fd, $0) }
        let code = errno
        fchmod(fd, 0o644)
        close(fd)
        guard written, renameat(folder.fd, temporary, folder.fd, Self.fileName) == 0 else {
            let failed = written ? errno : code
            unlinkat(folder.fd, temporary, 0)
            throw .output(path: shown, reason: String(cString: strerror(failed)))
        }
    }

    /// Removes these files, each only while it is still what the export made, and the folders
    /// they leave empty; how many files it removed.
    func removeFiles(_ items: [Item], objectsDirectory: String) -> Int {
        var walk = FolderWalk(root: folder, create: false)
        var removed = 0
        for item in items.sorted(by: { FileName.precedes($0.name, $1.name) }) {
            // A link where a folder goes (`try?`): the listed file is not reached, and stays.
            guard let found = try? walk.find(item.name), let info = found.folder.info(found.name),
                info.st_mode & S_IFMT == S_IFREG, info.st_uid == geteuid()
            else { continue }
            // A copy is written read-only: one made writable since is someone's file now.
            let recorded =
                UInt64(info.st_dev) == item.device && UInt64(info.st_ino) == item.inode
                && Int64(info.st_size) == item.size && info.st_mode & 0o222 == 0
            var object = stat()
            let linked =
                lstat(CacheLayout.objectPath(inObjectsDirectory: objectsDirectory, item.object), &object) == 0
                && object.st_dev == info.st_dev && object.st_ino == info.st_ino
            guard recorded || linked, found.folder.unlink(found.name) else { continue }
            removed += 1
            walk.removeEmptyFolders()
        }
        return removed
    }
}
