import CWorkerSystem
import Glibc

/// How what was written reaches the disk of the file system holding a path. On a disk's file
/// system (ext4, XFS, btrfs, tmpfs) one syncfs(2) flushes every file and name written so far, so
/// a batch costs one flush however many files it wrote. FUSE forwards the fsync of a file or a
/// folder to its server but never syncfs (Linux sends FUSE_SYNCFS to virtiofs only): there
/// syncfs flushes nothing, and each file written and each folder whose names changed is flushed
/// on its own.
public enum Durability: Sendable, Equatable {
    case fileSystem
    case eachFile

    /// statfs(2)'s magic number of FUSE (linux/magic.h).
    private static let fuse: Int64 = 0x6573_5546

    public static func of(_ path: String) -> Durability {
        Int64(worker_fs_type(path)) == fuse ? .eachFile : .fileSystem
    }

    /// Flushes `files` (their bytes) and `folders` (their names): one syncfs of the file system
    /// holding `root`, or an fsync of each. The first failure throws, naming its path: what it
    /// covered may be lost, and is never taken as kept.
    public func flush(root: String, files: @autoclosure () -> [String], folders: @autoclosure () -> [String]) throws(SystemError) {
        switch self {
        case .fileSystem:
            try Self.sync(root, O_RDONLY | O_DIRECTORY) { worker_syncfs($0) }
        case .eachFile:
            for file in files() { try Self.sync(file, O_RDONLY | O_NOFOLLOW) { fdatasync($0) } }
            for folder in folders() { try Self.flushFolder(folder) }
        }
    }

    /// Flushes the folder at `path` (its names).
    static func flushFolder(_ path: String) throws(SystemError) {
        try sync(path, O_RDONLY | O_DIRECTORY) { fsync($0) }
    }

    /// Flushes the folder open at `fd` (its names), naming it `shown` when that fails.
    static func flushFolder(_ fd: Int32, shown: String) throws(SystemError) {
        guard fsync(fd) == 0 else { throw SystemError("flush", shown) }
    }

    private static func sync(_ path: String, _ flags: Int32, _ call: (Int32) -> Int32) throws(SystemError) {
        let fd = open(path, flags | O_CLOEXEC)
        guard fd >= 0 else { throw SystemError("open", path) }
        defer { close(fd) }
        guard call(fd) == 0 else { throw SystemError("flush", path) }
    }
}
