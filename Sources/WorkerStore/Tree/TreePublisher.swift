import Crypto
import FoundationEssentials
import Glibc
import WorkerSupport

/// One file of a tree to publish: where it goes, and the object (or file) it holds.
public struct TreeFile: Sendable, Equatable {
    /// Relative to the tree (checked by `TreePath.problem`).
    public let path: String
    /// A cache object's name (its SHA-256) when `objects` is set, else a file's absolute path;
    /// nil for an entry never fetched. A tree's version is a digest of these: an object's path is
    /// made only when the version is built (a warm run whose tree did not change makes none).
    let object: String?
    let objects: String?

    /// A file holding `source` (an absolute path).
    public init(path: String, source: String?) {
        self.path = path
        object = source
        objects = nil
    }

    /// A file holding the cache object `object` of the folder `objectsDirectory`.
    public init(path: String, object: String?, objectsDirectory: String) {
        self.path = path
        self.object = object
        objects = objectsDirectory
    }

    /// The file to link, absolute.
    public var source: String? {
        guard let object else { return nil }
        guard let objects else { return object }
        return CacheLayout.objectPath(inObjectsDirectory: objects, object)
    }
}

/// What a publish did: the report's `tree` object.
public struct TreeOutcome: Sendable, Codable, Equatable {
    /// The tree's link, absolute.
    public var path: String
    /// The version folder the link names (`.NAME.worker/v-…` beside it).
    public var version: String
    /// Files in the version.
    public var files = 0
    /// Files made for this version: hard links to the objects, or copies on another file system.
    public var linked = 0
    public var copied = 0
    /// Entries with nothing to show (never fetched): absent from the tree.
    public var missing = 0
    /// Whether the link now names another version than before the run.
    public var switched = false

    package init(
        path: String,
        version: String,
        files: Int = 0,
        linked: Int = 0,
        copied: Int = 0,
        missing: Int = 0,
        switched: Bool = false
    ) {
        self.path = path
        self.version = version
        self.files = files
        self.linked = linked
        self.copied = copied
        self.missing = missing
        self.switched = switched
    }
}

/// Publishes a tree of files at their names as git-sync publishes a worktree: each version is a
/// complete folder in `.NAME.worker/` beside the tree's path, and the path itself is a symbolic
/// link switched from one version to the next with one `rename(2)`. A reader that resolves the
/// path sees one version whole; the previous version stays until the next switch (readers in
/// the middle of it keep working) and older ones are deleted. The version is named by its
/// content, so a tree that did not change switches nothing.
///
/// Only the link and the folder `.NAME.worker/` are ever written; a path that exists and is not
/// such a link is refused. Publishers of one path take turns (a lock in that folder); a
/// half-built version a killed run left is deleted by the next publish.
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
    var versions: String { parent + "/" + versionsName }
    func linkText(_ version: String) -> String { versionsName + "/" + version }

    /// Refuses a path that exists and is not this program's link (nothing is touched).
    public func check() throws(CacheError) {
        guard !name.isEmpty, name != ".", name != ".." else {
            throw .treeRefused(path: path, reason: "give a folder's path to publish the tree at")
        }
        _ = try currentVersion()
    }

    /// The version the link names now; nil when there is no link yet.
    package func currentVersion() throws(CacheError) -> String? {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            if errno == ENOENT { return nil }
            throw .system(SystemError("inspect", path))
        }
        guard info.st_mode & S_IFMT == S_IFLNK else {
            let kind = info.st_mode & S_IFMT == S_IFDIR ? "a folder" : "a file"
            throw .treeRefused(path: path, reason: "it is \(kind) this program did not make (it publishes a link there); "
                + "move it away or choose another path")
        }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count > 0 else { throw .system(SystemError("read the link", path)) }
        let text = String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let prefix = versionsName + "/"
        guard text.hasPrefix(prefix), Self.isVersionName(text.dropFirst(prefix.count)) else {
            throw .treeRefused(path: path, reason: "it is a link to \(text), which this program did not make; "
                + "remove it or choose another path")
        }
        return String(text.dropFirst(prefix.count))
    }

    static func isVersionName(_ name: some StringProtocol) -> Bool {
        name.hasPrefix("v-") && name.utf8.count == 18 && name.utf8.dropFirst(2).allSatisfy { Hex.value($0) != nil }
    }

    /// The version's name: a digest of every path and what it holds.
    package static func version(of files: [TreeFile]) -> String {
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

    /// The files with something to show, in one order whatever the manifests' (String's `<`:
    /// byte order for ASCII names, and a stable order for any).
    package static func ordered(_ files: [TreeFile]) -> [TreeFile] {
        files.filter { $0.object != nil }.sorted { $0.path < $1.path }
    }

    /// Publishes `files` (sorted here): builds the version unless it exists, switches the link
    /// to it unless it already names it, and deletes every version but it and the one before.
    /// With `exact`, `files` is what the caller believes (a sync's own plan and outcomes), and
    /// `exact` reads the truth (the index, under the cache's lock) if an object it names is gone
    /// by the time it is linked (another run replaced that version): the build starts again from it.
    public func publish(_ files: [TreeFile], exact: (() throws(CacheError) -> [TreeFile])? = nil) throws(CacheError) -> TreeOutcome {
        var exact = exact
        try check()
        do {
            try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        } catch {
            throw .output(path: parent, reason: "cannot create the tree's folder: \(ErrorText.describe(error))")
        }
        if mkdir(versions, 0o755) != 0, errno != EEXIST { throw .system(SystemError("create", versions)) }
        var folder = try TreeFolder(path: versions)
        defer { folder.close() }
        try folder.lock()
        // Checked again under the lock: another publisher may have switched it meanwhile.
        let previous = try currentVersion()
        folder.removeHalfBuilt()
        var files = files
        var present = Self.ordered(files)
        var version = Self.version(of: present)
        var outcome = TreeOutcome(path: path, version: version, files: present.count, missing: files.count - present.count)
        if previous == version, folder.has(version) { return outcome }
        while !folder.has(version) {
            let building = ".building-\(version)-\(getpid())"
            guard let counts = try folder.build(building, files: present) else {
                // An object vanished: built again from the index, once.
                folder.removeHalfBuilt()
                guard let reread = exact else { throw .unusable(path: versions, reason: "an object vanished while the tree was built") }
                files = try reread()
                present = Self.ordered(files)
                version = Self.version(of: present)
                outcome = TreeOutcome(path: path, version: version, files: present.count, missing: files.count - present.count)
                exact = nil
                if previous == version, folder.has(version) { return outcome }
                continue
            }
            outcome.linked = counts.linked
            outcome.copied = counts.copied
            try folder.install(building, as: version)
        }
        try folder.switchLink(at: parent, name: name, to: linkText(version))
        outcome.switched = true
        try folder.removeAll(except: [version] + (previous.map { [$0] } ?? []))
        return outcome
    }
}
