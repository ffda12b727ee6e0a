import CWorkerSystem
import FoundationEssentials
import Glibc
import WorkerSupport

/// The folder of a tree's versions (`.NAME.worker/`), worked on through its descriptor: names
/// inside it are never followed through a link, and only names this program makes there (`v-…`,
/// `.building-…`, `.link-…`, `.removing-…`, `lock`) are ever removed.
struct TreeFolder {
    let folder: FolderHandle
    var path: String { folder.path }
    private var fd: Int32 { folder.fd }

    init(_ folder: FolderHandle) {
        self.folder = folder
    }

    /// Waits for the other publishers of this tree, one at a time, as for the cache's lock: up
    /// to `wait` seconds (nil: without limit), ended by a stop request (exit 3 either way).
    func lock(wait: Double?, context: RunContext) async throws(CacheError) -> CacheLock {
        let lockPath = folder.shown("lock")
        let fd = try CacheLock.openOwnerOnly(lockPath, at: fd, name: "lock", flags: O_RDWR)
        return try await CacheLock(fd: fd, path: lockPath, wait: wait, noun: "the tree's lock", context: context)
    }

    func has(_ name: String) -> Bool {
        folder.info(name).map { $0.st_mode & S_IFMT == S_IFDIR } ?? false
    }

    /// Names in the folder.
    private func names() -> [String] { Self.names(in: fd) }

    /// Names in the folder open at `fd` (which stays open), without "." and "..".
    /// A version's name: `v-` and 16 hex digits (`TreePublisher.version(of:)`).
    static func isVersionName(_ name: some StringProtocol) -> Bool {
        name.hasPrefix("v-") && name.utf8.count == 18 && name.utf8.dropFirst(2).allSatisfy { Hex.value($0) != nil }
    }

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

    /// Deletes what killed or failed publishers left: versions not finished, links not switched,
    /// versions not wholly deleted.
    func removeHalfBuilt() {
        for name in names() where name.hasPrefix(".building-") || name.hasPrefix(".link-") || name.hasPrefix(".removing-") {
            Self.remove(name, in: fd)
        }
    }

    /// Deletes every version but `kept`. Each is renamed first: a deletion cut short by a kill
    /// leaves a `.removing-` name, never a version's name on a folder missing files (which a
    /// later publish of the same tree would take as complete).
    func removeAll(except kept: [String]) {
        for name in names() where Self.isVersionName(name) && !kept.contains(name) {
            let doomed = ".removing-\(name)-\(getpid())"
            guard renameat(fd, name, fd, doomed) == 0 else { continue }
            Self.remove(doomed, in: fd)
        }
    }

    /// Makes the folder `name` holding `files` (sorted by path, each with a source): hard links
    /// to the sources, copies (a reflink where the file system offers one) where a link cannot
    /// be made; flushed to the disk once at the end. Each folder is made and entered through the
    /// one above it, never through a link. Nil when a source is gone (the folder is left half
    /// built, for `removeHalfBuilt`).
    func build(_ name: String, files: [TreeFile]) throws(CacheError) -> (linked: Int, copied: Int)? {
        guard mkdirat(fd, name, 0o755) == 0 else { throw .system(SystemError("create", folder.shown(name))) }
        guard let root = try folder.child(name, create: false) else { throw .system(SystemError("open", folder.shown(name))) }
        // Durable before it gets a version's name: one syncfs, or each folder (and copy) on a
        // file system where syncfs flushes nothing (`Durability`).
        let durability = Durability.of(folder.path)
        var walk = FolderWalk(root: root, flushes: durability == .eachFile)
        var linked = 0
        var copied = 0
        for file in files {
            guard let source = file.source else { continue }
            let (parent, leaf) = try walk.parent(of: file.path)
            switch try LinkOrCopy.place(
                source, in: parent.fd, leaf, shownAs: parent.shown(leaf),
                flushCopy: durability == .eachFile)
            {
            case .linked?: linked += 1
            case .copied?: copied += 1
            case nil: return nil
            }
        }
        try walk.finish()
        if durability == .fileSystem, worker_syncfs(root.fd) != 0 { throw .system(SystemError("flush", root.path)) }
        return (linked, copied)
    }

    /// Gives a finished version its name, durably: a link switched to it afterwards never
    /// names a version the disk does not have.
    func install(_ building: String, as version: String) throws(CacheError) {
        guard renameat(fd, building, fd, version) == 0 else { throw .system(SystemError("rename", folder.shown(building))) }
        do throws(SystemError) { try Durability.flushFolder(fd, shown: path) } catch { throw .system(error) }
    }

    /// Points the link `name` in `parent` at `text` with one rename over it.
    func switchLink(in parent: FolderHandle, name: String, to text: String) throws(CacheError) {
        let temporary = ".link-\(getpid())"
        unlinkat(fd, temporary, 0)
        guard symlinkat(text, fd, temporary) == 0 else { throw .system(SystemError("create a link in", path)) }
        guard renameat(fd, temporary, parent.fd, name) == 0 else {
            unlinkat(fd, temporary, 0)
            throw .system(SystemError("switch the link", parent.shown(name)))
        }
        do throws(SystemError) { try Durability.flushFolder(parent.fd, shown: parent.path) } catch { throw .system(error) }
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
