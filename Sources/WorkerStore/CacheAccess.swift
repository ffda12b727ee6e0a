import Glibc

/// Who may do what with a cache: whether this process can write it (and, in words, why not),
/// and whether its administrator shares it with a group of readers.
public enum CacheAccess {
    /// Why a command that writes cannot write the cache at `root`, in words (the path, and the
    /// read-only file system or its owner and mode), or nil. A cache that does not exist yet is
    /// made by the command (whose own error names a parent it cannot create).
    public static func writeProblem(root: String) -> String? {
        var info = stat()
        // A missing root is made by the command; one that is not a folder is its error to name.
        guard stat(root, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else { return nil }
        var buffer = statvfs()
        if statvfs(root, &buffer) == 0, buffer.f_flag & UInt(ST_RDONLY) != 0 {
            return "\(root) is on a read-only file system; commands that only read (get of a cached URL, path, "
                + "status, plan, export, fingerprint, verify) work, nothing can be written"
        }
        let layout = [
            root, root + "/objects", CacheLayout.objectsDirectory(root), root + "/tmp", root + "/partial",
            CacheLayout.indexPath(root), CacheLayout.indexPath(root) + "-wal",
            CacheLayout.indexPath(root) + "-shm", root + "/lock",
        ]
        for path in layout {
            guard access(path, W_OK) != 0 else { continue }
            let code = errno
            if code == ENOENT || code == ENOTDIR { continue }
            var item = stat()
            let whose = stat(path, &item) == 0 ? " (\(owner(item)))" : ""
            if code == EROFS { return "\(path) is on a read-only file system" }
            return "\(path) is not writable by \(currentUser())\(whose): this command writes the cache; "
                + "run it as the cache's owner, or use a cache of your own (--cache-dir)"
        }
        return nil
    }

    /// `owner worker (uid 999), group worker (gid 999), mode 0755`.
    public static func owner(_ info: stat) -> String {
        let user = getpwuid(info.st_uid).flatMap { $0.pointee.pw_name.map { String(cString: $0) } }
        let group = getgrgid(info.st_gid).flatMap { $0.pointee.gr_name.map { String(cString: $0) } }
        let mode = String(info.st_mode & 0o7777, radix: 8)
        return "owner \(user.map { "\($0) " } ?? "")(uid \(info.st_uid)), group \(group.map { "\($0) " } ?? "")(gid \(info.st_gid)), "
            + "mode \(String(repeating: "0", count: max(0, 4 - mode.count)))\(mode)"
    }

    /// `user nobody (uid 65534)`: who this process is.
    public static func currentUser() -> String {
        let uid = geteuid()
        let name = getpwuid(uid).flatMap { $0.pointee.pw_name.map { String(cString: $0) } }
        return "user \(name.map { "\($0) " } ?? "")(uid \(uid))"
    }

    /// Whether the cache's administrator shares it with a group: the root folder is set-group-ID
    /// and group-readable (`chgrp readers CACHE && chmod 2750 CACHE`). Its index is then readable
    /// by that group (0640) rather than by its owner only, and URL user info is kept out of it.
    static func isGroupShared(_ root: String) -> Bool {
        var info = stat()
        return stat(root, &info) == 0 && info.st_mode & S_ISGID != 0 && info.st_mode & 0o040 != 0
    }

    /// Why the index at `path` cannot be read by this process, in words, or nil.
    static func readProblem(index path: String) -> String? {
        guard access(path, R_OK) != 0 else { return nil }
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return "\(path) is not readable by \(currentUser()) (\(owner(info))); the cache's owner can share it with a group "
            + "(docs/CACHE.md, \"A cache shared with readers\")"
    }
}
