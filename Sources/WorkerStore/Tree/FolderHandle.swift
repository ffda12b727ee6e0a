import FoundationEssentials
import Glibc
import WorkerSupport

/// A folder a tree or an export is published in, held by its descriptor: every name below it is
/// reached one component at a time with `O_NOFOLLOW`, so a symbolic link planted anywhere under
/// it is never followed — not to make a folder, not to place a file, not to delete one. The
/// folder itself is opened as the user named it (its own path may go through links the user
/// chose); nothing found inside it is trusted.
public final class FolderHandle: Sendable {
    public let fd: Int32
    /// For messages.
    public let path: String

    private init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    deinit {
        close(fd)
    }

    /// The folder at `path`; nil when there is none (or a file is in the way of its path).
    public static func open(_ path: String) throws(CacheError) -> FolderHandle? {
        let fd = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 { return FolderHandle(fd: fd, path: path) }
        if errno == ENOENT || errno == ENOTDIR { return nil }
        throw .system(SystemError("open", path))
    }

    /// The folder at `path`, made (with its parents) when missing; `noun` names it in a failure.
    public static func make(_ path: String, noun: String) throws(CacheError) -> FolderHandle {
        if let folder = try open(path) { return folder }
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw .output(path: path, reason: "cannot create \(noun): \(ErrorText.describe(error))")
        }
        guard let made = try open(path) else { throw .system(SystemError("open", path, code: ENOENT)) }
        return made
    }

    /// The path of `name` under this folder, for messages.
    public func shown(_ name: some StringProtocol) -> String {
        path.hasSuffix("/") ? path + name : path + "/" + name
    }

    /// What `name` is, without following a link; nil when there is nothing by that name.
    public func info(_ name: String) -> stat? {
        var info = stat()
        return fstatat(fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0 ? info : nil
    }

    /// What this folder is (its descriptor's `fstat`).
    public func info() -> stat? {
        var info = stat()
        return fstat(fd, &info) == 0 ? info : nil
    }

    /// The folder `name` (one component) inside this one, made with `mode` when missing and
    /// `create`; nil when missing and not `create`. A link or a file by that name is refused
    /// (exit 2, naming it) and left alone.
    public func child(_ name: some StringProtocol, create: Bool, mode: mode_t = 0o755) throws(CacheError) -> FolderHandle? {
        let name = String(name)
        let shown = shown(name)
        var fd = openat(self.fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        if fd < 0, errno == ENOENT {
            guard create else { return nil }
            guard mkdirat(self.fd, name, mode) == 0 || errno == EEXIST else { throw .system(SystemError("create", shown)) }
            fd = openat(self.fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        }
        guard fd >= 0 else {
            let code = errno
            if code == ELOOP || code == ENOTDIR { throw Self.inTheWay(shown, info(name)) }
            throw .system(SystemError("open", shown, code: code))
        }
        return FolderHandle(fd: fd, path: shown)
    }

    /// The folder at `relative` (components separated by `/`) below this one, each reached
    /// without following a link, made when missing and `create`.
    func descend(_ relative: some StringProtocol, create: Bool) throws(CacheError) -> FolderHandle? {
        var folder = self
        for component in relative.split(separator: "/", omittingEmptySubsequences: true) {
            guard let next = try folder.child(component, create: create) else { return nil }
            folder = next
        }
        return folder
    }

    /// Removes the name `name` (a file or a link itself, never what a link names).
    @discardableResult
    public func unlink(_ name: String) -> Bool {
        unlinkat(fd, name, 0) == 0
    }

    /// Why another user could write into this folder (the cache's rule: this user's own, and
    /// writable by no one else), or nil.
    func ownershipProblem(instead: String) -> String? {
        guard let info = info() else { return "\(path) cannot be inspected: \(String(cString: strerror(errno)))" }
        return CacheOwnership.folderProblem(path, info, uid: geteuid(), instead: instead)
    }

    /// The refusal of `path`, which is in the way of a folder: a link (never followed) or a file.
    static func inTheWay(_ path: String, _ info: stat?) -> CacheError {
        let kind = info.map { $0.st_mode & S_IFMT == S_IFLNK ? "a symbolic link" : "a file" } ?? "not a folder"
        return .treeRefused(
            path: path,
            reason: "it is \(kind) where a folder goes; worker never writes through a link "
                + "in a folder it publishes: move it away or choose another folder")
    }
}
