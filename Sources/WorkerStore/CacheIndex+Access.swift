import FoundationEssentials
import Glibc
import WorkerSupport

/// Opening the index as this process may: read-only where it may not write, its files' modes,
/// SQLite's refusals in words, and the URL keys of a shared cache. Part of `CacheIndex`.
extension CacheIndex {
    /// A connection, read-only ones checked with a first read: a WAL index whose WAL and
    /// shared-memory files are gone (an older worker deleted them as it closed) or that this user
    /// may not open (made before the cache was shared) cannot be read without them, which a
    /// reader that may not write the folder cannot fix; the main file is then opened as immutable
    /// (what the last checkpoint holds: complete once the writers have closed, as they checkpoint
    /// when they do).
    static func connect(_ path: String, create: Bool, readOnly: Bool) throws -> SQLiteDatabase {
        let database = try SQLiteDatabase(path: path, create: create, readOnly: readOnly)
        guard readOnly else { return database }
        var readable = database
        do throws(SQLiteError) {
            _ = try database.prepare("SELECT 1 FROM sqlite_master LIMIT 1").step()
        } catch {
            guard error.isAccessDenied, access(path, R_OK) == 0 else { throw error }
            readable = try SQLiteDatabase(path: path, create: false, readOnly: true, immutable: true)
        }
        // An index whose first run was stopped before it made the tables (an empty file) reads
        // as an empty index: a reader cannot make them.
        guard try !hasTable(readable, "entries") else { return readable }
        let empty = try SQLiteDatabase(path: ":memory:", create: true)
        _ = try prepareSchema(empty, path: path, create: true)
        return empty
    }

    /// SQLite's refusal in words when it comes from permissions or a read-only file system.
    static func explain(_ error: SQLiteError, path: String, readOnly: Bool) -> CacheError {
        guard error.isAccessDenied else {
            return .index(path: path, cause: error)
        }
        if let problem = CacheAccess.readProblem(index: path) { return .notReadable(problem) }
        if !readOnly, let problem = CacheAccess.writeProblem(root: PathName.parent(path)) { return .notWritable(problem) }
        return .index(path: path, cause: error)
    }

    /// The index names every URL: it and its WAL and shared-memory files are readable by the
    /// owner only (0600) whatever the umask — or by the group too (0640) in a cache its
    /// administrator shares with a group, whose rows then carry no URL user info
    /// (`credentialFree`). SQLite gives the WAL and -shm files the mode of the database file, so
    /// creating that one right covers all three; an index made otherwise is set right here.
    ///
    /// Checked by `lstat`, without opening the file: closing any descriptor of a file drops every
    /// POSIX lock this process holds on it, SQLite's included (the read-ahead's connection is open
    /// while a sync opens its own), and a connection that lost its lock lets another process's
    /// last close checkpoint and cut the WAL under it. The file is opened only to be made, or when
    /// its mode or group must change (an index made before the cache was shared).
    static func restrictPermissions(_ path: String, groupReadable: Bool) throws(CacheError) {
        let mode: mode_t = groupReadable ? 0o640 : 0o600
        var info = stat()
        if lstat(path, &info) != 0 {
            guard errno == ENOENT else { throw .system(SystemError("stat", path)) }
            // Missing, so no connection of this process holds it: made here with its mode.
            let made = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
            guard made >= 0 || errno == EEXIST else {
                if errno == EACCES || errno == EROFS || errno == EPERM,
                    let problem = CacheAccess.writeProblem(root: PathName.parent(path))
                {
                    throw .notWritable(problem)
                }
                throw .system(SystemError("create", path))
            }
            if made >= 0 { close(made) }
            guard lstat(path, &info) == 0 else { throw .system(SystemError("stat", path)) }
        }
        try checkSingleOwnFile(info, path: path)
        var folder = stat()
        let regroup = groupReadable && stat(PathName.parent(path), &folder) == 0 && folder.st_gid != info.st_gid
        guard regroup || info.st_mode & 0o777 != mode else { return }
        let fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw .system(SystemError("open", path)) }
        defer { close(fd) }
        var opened = stat()
        guard fstat(fd, &opened) == 0 else { throw .system(SystemError("stat", path)) }
        // The file checked is the file changed (not one swapped in between).
        guard opened.st_ino == info.st_ino, opened.st_dev == info.st_dev else {
            throw .unusable(path: path, reason: "it was replaced while it was checked")
        }
        try checkSingleOwnFile(opened, path: path)
        // The WAL and shared-memory files through descriptors that do not follow a link, and
        // only when they are this user's own single-named files: a link planted under their
        // names must not turn a change of mode or group onto another file.
        var files = [fd]
        for suffix in ["-wal", "-shm"] {
            let other = open(path + suffix, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            guard other >= 0 else { continue }
            if OwnFile.isPrivate(other) { files.append(other) } else { close(other) }
        }
        defer { for other in files.dropFirst() { close(other) } }
        for file in files {
            // Made before the folder was shared: it takes the folder's group, as new files do.
            if regroup { fchown(file, uid_t.max, folder.st_gid) }
            fchmod(file, mode)
        }
    }

    /// SQLite writes into the index: never through a second name (a planted hard link), and
    /// only into this user's own file.
    private static func checkSingleOwnFile(_ info: stat, path: String) throws(CacheError) {
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw .unusable(path: path, reason: "it is not a regular file (a link, a folder or a device)")
        }
        guard info.st_nlink == 1 else {
            throw .unusable(path: path, reason: "it has \(info.st_nlink) names (a hard link elsewhere); the index must have one")
        }
        guard info.st_uid == geteuid() else {
            throw .unsafe(
                "\(path) belongs to another user (\(CacheAccess.owner(info))): run the command as the cache's owner, "
                    + "or use a cache of your own (--cache-dir)")
        }
    }

    /// The cache's secret for the digests of URL user info (`credential-key`, 32 random bytes,
    /// readable by its owner only): made by a writer when missing; nil for a reader who may not
    /// read it (whose lookups of URLs with user info then miss).
    static func credentialKey(folder: String, create: Bool) -> [UInt8]? {
        let path = folder + "/credential-key"
        var fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        if fd < 0, errno == ENOENT, create {
            var generator = SystemRandomNumberGenerator()
            let secret = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let made = open(path + ".new", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if made >= 0 {
                let written = write(made, secret, secret.count) == secret.count && fsync(made) == 0
                close(made)
                // Another writer may have made it first: theirs stays (link does not replace).
                if written { _ = link(path + ".new", path) }
                unlink(path + ".new")
            }
            fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        }
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, OwnFile.isPrivate(info), info.st_mode & 0o077 == 0, info.st_size == 32 else { return nil }
        var secret = [UInt8](repeating: 0, count: 32)
        guard read(fd, &secret, 32) == 32 else { return nil }
        return secret
    }

    /// The key of `url`'s rows: the URL itself, or without its user info in a shared cache.
    public func key(_ url: String) -> String {
        credentialFree ? CredentialFreeURL.key(url, secret: credentialKey) : url
    }
}
