import CWorkerSystem
import FoundationEssentials
import Glibc

/// Whether a folder is on a network file system, where SQLite's WAL mode is unsafe: its
/// shared-memory index (`-shm`) is mapped per host, so two hosts writing one index through
/// NFS or SMB would corrupt it. On such a file system the index uses a rollback journal, which
/// relies only on the file system's POSIX locks, as SQLite's documentation asks.
public enum FileSystemKind: Sendable, Equatable {
    case local
    case network(String)

    /// statfs(2) magic numbers of network and user-space file systems (linux/magic.h).
    private static let networkTypes: [Int: String] = [
        0x6969: "nfs", 0x517B: "smb", 0xFF53_4D42: "cifs", 0xFE53_4D42: "smb2", 0x6573_5546: "fuse",
        0x00C3_6400: "ceph", 0x5346_414F: "afs", 0x0102_1997: "9p", 0x7461_636F: "ocfs2", 0x0115_6F13: "gfs2",
        0x0BD0_0BD0: "lustre",
    ]

    /// The kind of the file system holding `path`. `WORKER_NETWORK_FS=1` forces `network` (for a
    /// file system the magic numbers miss), `=0` forces `local`.
    public static func of(_ path: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> FileSystemKind {
        switch environment["WORKER_NETWORK_FS"] {
        case "1": return .network("WORKER_NETWORK_FS=1")
        case "0": return .local
        default: break
        }
        let type = worker_fs_type(path)
        guard type >= 0 else { return .local }
        let magic = Int(UInt32(truncatingIfNeeded: type))
        return networkTypes[magic].map { .network($0) } ?? .local
    }

    var isNetwork: Bool {
        if case .network = self { true } else { false }
    }
}
