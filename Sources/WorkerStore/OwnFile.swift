import Glibc

/// The check made before writing into a file of the cache that this process did not just create
/// (a kept part to resume, the lock, the index): a regular file with one name, owned by us. A hard
/// link planted under such a name would otherwise have our bytes written into, or truncate, the
/// file it links to.
public enum OwnFile {
    public static func isPrivate(_ fd: Int32) -> Bool {
        var info = stat()
        return fstat(fd, &info) == 0 && isPrivate(info)
    }

    static func isPrivate(_ info: stat) -> Bool {
        (info.st_mode & S_IFMT) == S_IFREG && info.st_nlink == 1 && info.st_uid == geteuid()
    }

    /// A regular file with one name, whoever owns it (the lock of a cache shared with a group).
    static func isSingleLinked(_ fd: Int32) -> Bool {
        var info = stat()
        return fstat(fd, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG && info.st_nlink == 1
    }
}
