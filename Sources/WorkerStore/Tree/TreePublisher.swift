import Crypto
import FoundationEssentials
import Glibc
import WorkerSupport

/// Publishes a tree of files at their names as git-sync publishes a worktree: each version is a
/// complete folder in `.NAME.worker/` beside the tree's path, and the path itself is a symbolic
/// link switched from one version to the next with one `rename(2)`. A reader that resolves the
/// path sees one version whole; the previous version stays until the next switch (readers in
/// the middle of it keep working) and older ones are deleted. The version is named by its
/// content, so a tree that did not change switches nothing.
///
/// Only the link and the folder `.NAME.worker/` are ever written, both reached through the
/// parent folder's descriptor without following a link (the parent may be shared: nothing in
/// it is trusted). `.NAME.worker/` must be this user's own and writable by no one else (the
/// cache's rule); run as root, a parent other users can write without the sticky bit is refused.
/// A path that exists and is not such a link is refused. Publishers of one path take turns (a
/// lock in that folder, waited for as the cache's lock is, and never while holding it); a
/// half-built version a killed run left is deleted by the next publish, and one a failed
/// publish was building is deleted before it returns.
public struct TreePublisher: Sendable {
    /// The tree's path, absolute.
    public let path: String
    let parent: String
    let name: String

    public init(path: String) {
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
        self.path = absolute
        let slash = absolute.lastIndex(of: "/")!
        parent = slash == absolute.startIndex ? "/" : String(absolute[..<slash])
        name = String(absolute[absolute.index(after: slash)...])
    }

    /// The folder of versions, beside the link, and the link's text for `version`.
    var versionsName: String { "." + name + ".worker" }
    var versions: String { parent == "/" ? "/" + versionsName : parent + "/" + versionsName }
    func linkText(_ version: String) -> String { versionsName + "/" + version }

    /// What the user may do instead of fixing a folder (in refusals).
    static let instead = "choose another tree path"

    /// Every check that can be made before a run's first request: the path's name, the parent
    /// (run as root), the link, and `.NAME.worker/` (a real folder, this user's own, writable by
    /// no one else). Nothing is touched.
    public func check() throws(CacheError) {
        guard !name.isEmpty, name != ".", name != ".." else {
            throw .treeRefused(path: path, reason: "give a folder's path to publish the tree at")
        }
        guard let parent = try FolderHandle.open(parent) else { return }
        try checkParent(parent)
        _ = try currentVersion(in: parent)
        _ = try versionsFolder(in: parent, create: false)
    }

    /// Run as root, a parent that another user could write (owned by them, or open to others
    /// without the sticky bit) is refused: they could swap the link or `.NAME.worker/` between
    /// two of root's steps.
    private func checkParent(_ parent: FolderHandle) throws(CacheError) {
        guard geteuid() == 0, let info = parent.info() else { return }
        // The sticky bit keeps others from renaming what root made there; nothing keeps the
        // folder's owner from it.
        let sticky = info.st_mode & S_ISVTX != 0
        let open =
            info.st_mode & 0o002 != 0
            || info.st_mode & 0o020 != 0 && CacheOwnership.otherMembers(of: info.st_gid, besides: info.st_uid) != nil
        let othersCanWrite = info.st_uid != 0 || open && !sticky
        guard othersCanWrite else { return }
        throw .unsafeFolder(
            "\(Sanitize.terminal(parent.path)), the folder the tree \(Sanitize.terminal(path)) is published "
                + "in, can be written by other users (\(CacheAccess.owner(info))), who could swap its link or "
                + "\(versionsName) while this command, as root, writes there: publish into a folder only root can write "
                + "(or one with the sticky bit), or run as the user who owns it")
    }

    /// `.NAME.worker/`, this user's own and writable by no one else: made when `create` and
    /// missing; nil when missing and not `create`. A link or a file in its place, or a folder
    /// another user owns or can write, is refused (exit 4) and left as it is.
    private func versionsFolder(in parent: FolderHandle, create: Bool) throws(CacheError) -> FolderHandle? {
        let shown = Sanitize.terminal(parent.shown(versionsName))
        if let info = parent.info(versionsName), info.st_mode & S_IFMT != S_IFDIR {
            let kind = info.st_mode & S_IFMT == S_IFLNK ? "a symbolic link" : "not a folder"
            throw .unsafeFolder(
                "\(shown) is \(kind) (\(CacheAccess.owner(info))): another user may have planted it; "
                    + "remove it, or \(Self.instead)")
        }
        let folder: FolderHandle?
        do {
            folder = try parent.child(versionsName, create: create)
        } catch {
            if case .treeRefused = error { throw .unsafeFolder("\(shown) is not a real folder: remove it, or \(Self.instead)") }
            throw error
        }
        guard let folder else { return nil }
        if let problem = folder.ownershipProblem(instead: Self.instead) { throw .unsafeFolder(problem) }
        return folder
    }

    /// The version the link names now; nil when there is no link yet.
    public func currentVersion() throws(CacheError) -> String? {
        guard let parent = try FolderHandle.open(parent) else { return nil }
        return try currentVersion(in: parent)
    }

    private func currentVersion(in parent: FolderHandle) throws(CacheError) -> String? {
        guard let info = parent.info(name) else {
            if errno == ENOENT { return nil }
            throw .system(SystemError("inspect", path))
        }
        guard info.st_mode & S_IFMT == S_IFLNK else {
            let kind = info.st_mode & S_IFMT == S_IFDIR ? "a folder" : "a file"
            throw .treeRefused(
                path: path,
                reason: "it is \(kind) this program did not make (it publishes a link there); "
                    + "move it away or choose another path")
        }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlinkat(parent.fd, name, &buffer, buffer.count - 1)
        guard count > 0 else { throw .system(SystemError("read the link", path)) }
        let text = String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let prefix = versionsName + "/"
        guard text.hasPrefix(prefix), TreeFolder.isVersionName(text.dropFirst(prefix.count)) else {
            throw .treeRefused(
                path: path,
                reason: "it is a link to \(text), which this program did not make; "
                    + "remove it or choose another path")
        }
        return String(text.dropFirst(prefix.count))
    }

    /// The version's name: a digest of every path and what it holds.
    public static func version(of files: [TreeFile]) -> String {
        var hasher = SHA256()
        let separators: [UInt8] = [0, 10]
        for file in files {
            var path = file.path
            var source = file.object ?? ""
            path.withUTF8 { hasher.update(bufferPointer: UnsafeRawBufferPointer($0)) }
            separators.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<1])) }
            source.withUTF8 { hasher.update(bufferPointer: UnsafeRawBufferPointer($0)) }
            separators.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[1..<2])) }
        }
        return "v-" + Hex.encode(hasher.finalize().prefix(8))
    }

    /// The files with something to show, in one order whatever the manifests': by bytes, as the
    /// file system tells names apart (for ASCII names String's `<`).
    public static func ordered(_ files: [TreeFile]) -> [TreeFile] {
        files.filter { $0.object != nil }.sorted { FileName.precedes($0.path, $1.path) }
    }

    /// Publishes the files `files()` names: builds the version unless it exists, switches the
    /// link to it unless it already names it, and deletes every version but it and the one
    /// before. The tree's lock is taken first (up to `wait` seconds, ended by a stop request:
    /// exit 3), then the cache's (`cacheDirectory`; none without one), under which `files()` is
    /// read and the version built, so that no gc or other run removes an object between its
    /// lookup and its link. With `exact`, `files()` is what the caller believes (a sync's own
    /// plan and outcomes), and `exact` reads the truth (the index) if an object it names is gone
    /// by the time it is linked (another run replaced that version): the build starts again from it.
    public func publish(
        cacheDirectory: String?, wait: Double?, context: RunContext, onlyComplete: Bool = false,
        files: () throws(CacheError) -> [TreeFile],
        exact: (() throws(CacheError) -> [TreeFile])? = nil
    ) async throws(CacheError) -> TreeOutcome {
        try check()
        let parent = try FolderHandle.make(parent, noun: "the tree's folder")
        try checkParent(parent)
        guard let versions = try versionsFolder(in: parent, create: true) else { throw .system(SystemError("open", self.versions)) }
        let folder = TreeFolder(versions)
        let treeLock = try await folder.lock(wait: wait, context: context)
        defer { treeLock.release() }
        let cacheLock = try await cacheDirectory.asyncMap { directory throws(CacheError) in
            try await CacheLock(directory: directory, wait: wait, context: context)
        }
        defer { cacheLock?.release() }
        // Read again under the lock: another publisher may have switched it meanwhile.
        let previous = try currentVersion(in: parent)
        folder.removeHalfBuilt()
        var exact = exact
        var all = try files()
        var present = Self.ordered(all)
        var version = Self.version(of: present)
        var outcome = TreeOutcome(path: path, version: version, files: present.count, missing: all.count - present.count)
        if previous == version, folder.has(version) { return outcome }
        if onlyComplete, outcome.missing > 0 {
            outcome.withheld = true
            outcome.version = previous ?? ""
            return outcome
        }
        while !folder.has(version) {
            let building = ".building-\(version)-\(getpid())"
            let counts: (linked: Int, copied: Int)?
            do {
                counts = try folder.build(building, files: present)
            } catch {
                folder.removeHalfBuilt()
                throw error
            }
            guard let counts else {
                // An object vanished: built again from the index, once.
                folder.removeHalfBuilt()
                guard let reread = exact else {
                    throw .unusable(path: versions.path, reason: "an object vanished while the tree was built")
                }
                all = try reread()
                present = Self.ordered(all)
                version = Self.version(of: present)
                outcome = TreeOutcome(path: path, version: version, files: present.count, missing: all.count - present.count)
                exact = nil
                if previous == version, folder.has(version) { return outcome }
                continue
            }
            outcome.linked = counts.linked
            outcome.copied = counts.copied
            try folder.install(building, as: version)
        }
        try folder.switchLink(in: parent, name: name, to: linkText(version))
        outcome.switched = true
        folder.removeAll(except: [version] + (previous.map { [$0] } ?? []))
        return outcome
    }
}

extension Optional {
    /// `map` for an async transform.
    fileprivate func asyncMap<T>(_ transform: (Wrapped) async throws(CacheError) -> T) async throws(CacheError) -> T? {
        guard let self else { return nil }
        return try await transform(self)
    }
}
