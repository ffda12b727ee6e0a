import CWorkerSystem
import FoundationEssentials
import Glibc
import WorkerSupport

/// The folder of a tree's versions (`.NAME.worker/`), worked on through its descriptor: names
/// inside it are never followed through a link another user could plant, and only names this
/// program makes there (`v-…`, `.building-…`, `.link-…`, `lock`) are ever removed.
struct TreeFolder {
    let path: String
    private let fd: Int32
    private var lockFD: Int32 = -1

    init(path: String) throws(CacheError) {
        self.path = path
        fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw .system(SystemError("open", path)) }
    }

    func close() {
        if lockFD >= 0 { Glibc.close(lockFD) }
        Glibc.close(fd)
    }

    /// Waits for the other publishers of this tree: one at a time.
    mutating func lock() throws(CacheError) {
        lockFD = openat(fd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard lockFD >= 0 else { throw .system(SystemError("open", path + "/lock")) }
        while flock(lockFD, LOCK_EX) != 0 {
            guard errno == EINTR else { throw .system(SystemError("lock", path + "/lock")) }
        }
    }

    func has(_ name: String) -> Bool {
        var info = stat()
        return fstatat(fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }

    /// Names in the folder.
    private func names() -> [String] { Self.names(in: fd) }

    /// Names in the folder open at `fd` (which stays open), without "." and "..".
    private static func names(in fd: Int32) -> [String] {
        let copy = dup(fd)
        guard copy >= 0, let listing = fdopendir(copy) else { return [] }
        defer { closedir(listing) }
        // A duplicate shares the position of the listing before it.
        rewinddir(listing)
        var names: [String] = []
        while let entry = readdir(listing) {
            let name = DirectoryEntry.withName(entry) { String(decoding: $0, as: UTF8.self) }
            if name != ".", name != ".." { names.append(name) }
        }
        return names
    }

    /// Deletes what killed publishers left: versions not finished, links not switched, versions
    /// not wholly deleted.
    func removeHalfBuilt() {
        for name in names() where name.hasPrefix(".building-") || name.hasPrefix(".link-") || name.hasPrefix(".removing-") {
            Self.remove(name, in: fd)
        }
    }

    /// Deletes every version but `kept`. Each is renamed first: a deletion cut short by a kill
    /// leaves a `.removing-` name, never a version's name on a folder missing files (which a
    /// later publish of the same tree would take as complete).
    func removeAll(except kept: [String]) throws(CacheError) {
        for name in names() where TreePublisher.isVersionName(name) && !kept.contains(name) {
            let doomed = ".removing-\(name)-\(getpid())"
            guard renameat(fd, name, fd, doomed) == 0 else { continue }
            Self.remove(doomed, in: fd)
        }
    }

    /// Makes the folder `name` holding `files` (sorted by path, each with a source): hard links
    /// to the sources, copies (a reflink where the file system offers one) where a link cannot
    /// be made; flushed to the disk once at the end. Nil when a source is gone (the folder is
    /// left half built, for `removeHalfBuilt`).
    func build(_ name: String, files: [TreeFile]) throws(CacheError) -> (linked: Int, copied: Int)? {
        guard mkdirat(fd, name, 0o755) == 0 else { throw .system(SystemError("create", path + "/" + name)) }
        let root = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard root >= 0 else { throw .system(SystemError("open", path + "/" + name)) }
        defer { Glibc.close(root) }
        var folders = Set<Substring>()
        var linked = 0
        var copied = 0
        for file in files {
            guard let source = file.source else { continue }
            var end = file.path.endIndex
            var missing: [Substring] = []
            while let slash = file.path[..<end].lastIndex(of: "/") {
                let folder = file.path[..<slash]
                if folders.contains(folder) { break }
                missing.append(folder)
                end = slash
            }
            for folder in missing.reversed() {
                guard mkdirat(root, String(folder), 0o755) == 0 || errno == EEXIST else {
                    throw .system(SystemError("create", path + "/" + name + "/" + folder))
                }
                folders.insert(folder)
            }
            switch try LinkOrCopy.place(source, in: root, file.path, shownAs: path + "/" + name + "/" + file.path) {
            case .linked?: linked += 1
            case .copied?: copied += 1
            case nil: return nil
            }
        }
        _ = worker_syncfs(root)
        return (linked, copied)
    }

    /// Gives a finished version its name.
    func install(_ building: String, as version: String) throws(CacheError) {
        guard renameat(fd, building, fd, version) == 0 else { throw .system(SystemError("rename", path + "/" + building)) }
    }

    /// Points the link `name` in `parent` at `text` with one rename over it.
    func switchLink(at parent: String, name: String, to text: String) throws(CacheError) {
        let parentFD = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard parentFD >= 0 else { throw .system(SystemError("open", parent)) }
        defer { Glibc.close(parentFD) }
        let temporary = ".link-\(getpid())"
        unlinkat(fd, temporary, 0)
        guard symlinkat(text, fd, temporary) == 0 else { throw .system(SystemError("create a link in", path)) }
        guard renameat(fd, temporary, parentFD, name) == 0 else {
            unlinkat(fd, temporary, 0)
            throw .system(SystemError("switch the link", parent + "/" + name))
        }
        _ = fsync(parentFD)
    }

    /// Removes `name` in `folder`, a folder's content first, without following links.
    static func remove(_ name: String, in folder: Int32) {
        let inner = openat(folder, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard inner >= 0 else {
            unlinkat(folder, name, 0)
            return
        }
        for child in names(in: inner) { remove(child, in: inner) }
        Glibc.close(inner)
        unlinkat(folder, name, AT_REMOVEDIR)
    }
}
