import FoundationEssentials
import Glibc
import WorkerManifest
import WorkerSupport

/// Problems of the cache that stop a whole run: the cache itself cannot be used, or another run
/// holds it.
public enum CacheError: Error, Sendable, CustomStringConvertible {
    /// Disk full, permissions, a damaged folder: exit 4.
    case unusable(path: String, reason: String)
    /// SQLite refused the index (corrupt, full disk, read-only): exit 4, its code kept.
    case index(path: String, cause: SQLiteError)
    /// A system call on the cache's files failed (permissions, a full disk): exit 4, errno kept.
    case system(SystemError)
    /// Another run held the lock longer than `--wait-lock`: exit 3.
    case locked(path: String, holder: String?)
    /// An output file (`--report`, `--junit`, …) could not be written: exit 4.
    case output(path: String, reason: String)
    /// A command that writes met a cache it may not write (read-only file system, another
    /// user's files): exit 4, the path and why in words.
    case notWritable(String)
    /// A command that writes met a cache another user could write into (a folder of theirs, or
    /// one open to others): exit 4, which folder, its owner and mode, and the fix.
    case unsafe(String)
    /// A command met an index it may not read (another user's, not shared): exit 4, in words.
    case notReadable(String)
    /// A folder a tree or an export is published through (`.NAME.worker/`, a version, DIR's
    /// parent when run as root) that another user could write into, or a link planted in its
    /// place: exit 4, which and why (owner, mode), and the fix.
    case unsafeFolder(String)
    /// A tree's folder (`--tree`, `export --atomic`) exists and is not a link this program made:
    /// left as it is (exit 2).
    case treeRefused(path: String, reason: String)

    /// The disk had no room for an index write.
    public var isDiskFull: Bool {
        if case .index(_, let cause) = self { return cause.isFull }
        return false
    }

    public var description: String {
        switch self {
        case .unusable(let path, let reason):
            "cache unusable: \(path): \(reason)"
        case .index(let path, let cause) where cause.isCorrupt:
            "cache unusable: \(path): \(cause); the index is damaged and cannot be repaired: `worker clear` deletes it "
                + "with every object (the next sync downloads everything again)"
        case .index(let path, let cause):
            "cache unusable: \(path): \(cause)"
        case .system(let cause):
            "cache unusable: \(cause.path): \(String(cString: strerror(cause.code))) (\(cause.operation))"
        case .locked(let path, let holder):
            "cache is locked by another run\(holder.map { " (\($0))" } ?? ""): \(path)"
        case .output(let path, let reason):
            "cannot write \(path): \(reason)"
        case .notWritable(let problem):
            "cache not writable: \(problem)"
        case .notReadable(let problem):
            "cache not readable: \(problem)"
        case .unsafe(let problem):
            "refusing to write the cache: \(problem)"
        case .unsafeFolder(let problem):
            "refusing to publish: \(problem)"
        case .treeRefused(let path, let reason):
            "refusing to publish a tree at \(path): \(reason)"
        }
    }
}

/// A system call on a file failed: what was tried, on which path, and `errno`.
public struct SystemError: Error, Sendable, Equatable, CustomStringConvertible {
    public let operation: String
    public let path: String
    public let code: Int32

    /// The error of the call that just failed (reads `errno`).
    init(_ operation: String, _ path: String, code: Int32 = errno) {
        self.operation = operation
        self.path = path
        self.code = code
    }

    public var description: String { "cannot \(operation) \(path): \(String(cString: strerror(code)))" }
}

/// Which way a run stopped by a cache error ends.
extension CacheError: ExitClassified {
    public var exitClass: ExitClass {
        switch self {
        case .locked: .busy
        case .treeRefused: .usage
        case .unusable, .index, .system, .output, .notWritable, .notReadable, .unsafe, .unsafeFolder: .unusable
        }
    }

    public var exitMessage: String { "worker: \(self)" }
}
