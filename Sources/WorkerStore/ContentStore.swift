import CWorkerSystem
import FoundationEssentials
import Glibc
import Synchronization
import WorkerSupport

/// The content-addressed part of the cache: `objects/sha256/ab/abcdef…` (read-only files named by
/// the SHA-256 of their bytes) and `tmp/` for in-flight downloads.
public struct ContentStore: Sendable {
    public let root: String
    public let objectsDirectory: String
    public let tmpDirectory: String
    /// Bodies cut off part-way, kept to be resumed.
    public let partials: PartialDownloads
    /// The object folders were made by this value's `init`: the cache holds no object yet.
    public let isNew: Bool
    /// `tmp/` and `objects/sha256/`, open: files are created and installed by relative names.
    private let folders: StoreFolders
    /// How a batch's objects reach the disk: one syncfs, or an fsync of each (FUSE).
    let durability: Durability

    /// Creates the layout under `root` when missing; throws `CacheError.unusable` naming the path.
    public init(root: String) throws(CacheError) {
        self.root = root
        objectsDirectory = CacheLayout.objectsDirectory(root)
        tmpDirectory = root + "/tmp"
        partials = PartialDownloads(directory: root + "/partial")
        // The root's parents too (like `mkdir -p`): a fresh $XDG_CACHE_HOME may not exist yet.
        // A root made here is 0755 whatever the umask (under `umask 000` it would be writable
        // by everyone, who could then plant files beside the index).
        var rootInfo = stat()
        if stat(root, &rootInfo) != 0 {
            let made = Self.missingFolders(root)
            do {
                try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            } catch {
                throw CacheError.unusable(path: root, reason: Self.reason(error))
            }
            chmod(root, 0o755)
            // Its name on the disk before anything inside it counts as kept: a power cut must
            // not take a new cache away with every object a finished run reported.
            try Self.flushParents(of: made)
        }
        // The root may be a symlink (a cache moved to another disk); nothing inside it may be:
        // a planted link must not lead writes out of the cache.
        try Self.makeDirectory(root, followLink: true)
        // Nothing is written into a cache another user could write into.
        if let problem = CacheOwnership.problem(root: root) { throw CacheError.unsafe(problem) }
        try Self.makeDirectory(root + "/objects")
        isNew = try Self.makeDirectory(objectsDirectory)
        try Self.makeDirectory(tmpDirectory)
        try Self.makeDirectory(partials.directory)
        // All 256 fan-out folders, checked every run, so installing an object never follows a
        // link: by one listing when the file system says what each entry is; made (or refused)
        // one by one otherwise. A new cache's are made as its objects arrive (256 mkdirs at the
        // start would delay the first download), the rest by `completeLayout`.
        if !isNew, !Self.hasEveryFanOutFolder(objectsDirectory) {
            for byte in 0..<256 {
                try Self.makeDirectory(objectsDirectory + "/" + Hex.encode([UInt8(byte)]))
            }
        }
        var info = stat()
        if lstat(CacheLayout.indexPath(root), &info) == 0, (info.st_mode & S_IFMT) != S_IFREG {
            throw CacheError.unusable(path: CacheLayout.indexPath(root), reason: "is not a regular file")
        }
        folders = try StoreFolders(temporary: tmpDirectory, objects: objectsDirectory, fanOutComplete: !isNew)
        durability = Durability.of(root)
    }

    /// Makes the fan-out folders a new cache's objects have not needed yet (see `init`); call
    /// before a run that made the store ends, so that every cache a run leaves has all 256.
    public func completeLayout() {
        folders.completeFanOut()
    }

    /// The path an object with this SHA-256 (64 lowercase hex digits) has or will have.
    public func objectPath(_ sha256: String) -> String {
        precondition(Hex.isLowercaseHex(sha256, length: 64), "object names are 64 lowercase hex digits")
        return CacheLayout.objectPath(root, sha256)
    }

    /// True when the object file is present (not followed if it is a symlink planted in the cache).
    public func contains(_ sha256: String) -> Bool {
        var info = stat()
        return lstat(objectPath(sha256), &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    }

    /// A new, exclusive temporary file under `tmp/`, created read-only (the descriptor can still
    /// write it), so installing it needs no chmod. Names are the process's token and a counter:
    /// O_EXCL settles the rest without a random draw per file.
    public func makeTemporaryFile() throws(SystemError) -> (fd: Int32, path: String) {
        for _ in 0..<8 {
            let number = temporaryCounter.withLock { counter in
                counter += 1
                return counter
            }
            let digits = String(number)
            // The path in one allocation; the file is made by its name, the path's end.
            var path = String()
            path.reserveCapacity(tmpDirectory.utf8.count + 1 + temporaryPrefix.utf8.count + digits.utf8.count)
            path += tmpDirectory
            path += "/"
            let nameStart = path.utf8.count
            path += temporaryPrefix
            path += digits
            let fd = path.withCString {
                openat(folders.temporary, $0 + nameStart, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o444)
            }
            if fd >= 0 { return (fd, path) }
            if errno != EEXIST {
                throw SystemError("create", path)
            }
        }
        throw SystemError("create a temporary file in", tmpDirectory, code: EEXIST)
    }

    /// Moves a verified temporary file to its final name. Replaces a file of the same name, which
    /// can only be the same bytes or a damaged leftover (`BatchCommit` installs over a file only
    /// once the new bytes are flushed).
    func install(temporary path: String, sha256: String) throws(CacheError) {
        guard move(path, to: sha256, replacing: true) == 0 else { throw renameFailed(path, sha256, code: errno) }
    }

    /// Moves a verified temporary file to its final name unless a file (of any kind) has that
    /// name already: false then, and the temporary file stays for `install`.
    func installNew(temporary path: String, sha256: String) throws(CacheError) -> Bool {
        if move(path, to: sha256, replacing: false) == 0 { return true }
        let code = errno
        switch code {
        case EEXIST:
            return false
        case EINVAL, ENOSYS:
            // No RENAME_NOREPLACE here (an older kernel, some network file systems): look first.
            // Only the run holding the lock installs, so nothing comes in between.
            var info = stat()
            if lstat(objectPath(sha256), &info) == 0 { return false }
            try install(temporary: path, sha256: sha256)
            return true
        default:
            throw renameFailed(path, sha256, code: code)
        }
    }

    /// Renames a temporary file to the object's name, refusing to replace one unless `replacing`:
    /// a file of `tmp/` by names relative to the open folders, any other by its full path; the
    /// object's fan-out folder is made first when it is not known to be there.
    private func move(_ path: String, to sha256: String, replacing: Bool) -> Int32 {
        guard folders.ensureFanOutFolder(for: sha256) else { return -1 }
        if let nameStart = temporaryNameStart(path) {
            let target = StoreFolders.relativeObjectPath(sha256)
            return path.withCString { path in
                target.withCString { target in
                    let name = path + nameStart
                    return replacing
                        ? renameat(folders.temporary, name, folders.objects, target)
                        : worker_renameat_noreplace(folders.temporary, name, folders.objects, target)
                }
            }
        }
        let target = objectPath(sha256)
        return replacing ? rename(path, target) : worker_rename_noreplace(path, target)
    }

    /// Where the name starts in the path of a file directly in `tmp/` (every temporary file this
    /// store makes), as a UTF-8 offset; else nil.
    /// (Asked of every body a run installs: the bytes compared in place.)
    private func temporaryNameStart(_ path: String) -> Int? {
        var (path, directory) = (path, tmpDirectory)
        return directory.withUTF8 { prefix in
            path.withUTF8 { bytes -> Int? in
                let slash = UInt8(ascii: "/")
                guard let base = bytes.baseAddress, let start = prefix.baseAddress, bytes.count > prefix.count + 1,
                    memcmp(base, start, prefix.count) == 0, bytes[prefix.count] == slash,
                    memchr(base + prefix.count + 1, Int32(slash), bytes.count - prefix.count - 1) == nil
                else { return nil }
                return prefix.count + 1
            }
        }
    }

    /// The error of a failed rename (`code`) into the object's name; the temporary file is deleted.
    private func renameFailed(_ path: String, _ sha256: String, code: Int32) -> CacheError {
        unlink(path)
        return .system(SystemError("rename into", objectPath(sha256), code: code))
    }

    /// Removes an object file; a missing file is fine.
    public func remove(_ sha256: String) {
        unlink(objectPath(sha256))
    }

    /// Makes the objects `installed` (SHA-256s) durable with their names: one flush for the
    /// batch where the file system allows it (the idea of git's batch fsync mode), else each
    /// object and each folder above it (`Durability`).
    func flush(installed: @autoclosure () -> [String]) throws(CacheError) {
        do throws(SystemError) {
            try durability.flush(root: root, files: installed().map(objectPath), folders: foldersAbove(installed()))
        } catch {
            throw .system(error)
        }
    }

    /// The folders whose names installing these objects changed, deepest first: their fan-out
    /// folders, then `objects/sha256/` (which a new cache's fan-out folders are made in), up to the root.
    private func foldersAbove(_ installed: [String]) -> [String] {
        var fanOut: [String] = []
        var seen = Set<Substring>()
        for object in installed where seen.insert(object.prefix(2)).inserted {
            fanOut.append(objectsDirectory + "/" + object.prefix(2))
        }
        return fanOut + [objectsDirectory, root + "/objects", root]
    }

    /// Marks the cache as being written: objects may be installed before their rows commit.
    /// A run that ends normally removes the mark; one that finds it at start (a crash came in
    /// between) sweeps objects no row names. The mark is durable when this returns (the root
    /// folder is flushed: one journal commit, not a flush of every file written so far), so no
    /// object can reach the disk before it. Call only under the lock.
    func markUnclean() throws(CacheError) {
        let path = CacheLayout.uncleanMarkPath(root)
        let fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .system(SystemError("create", path)) }
        close(fd)
        do throws(SystemError) { try Durability.flushFolder(root) } catch { throw .system(error) }
    }

    public func markClean() {
        unlink(CacheLayout.uncleanMarkPath(root))
    }

    /// The marks in the cache root, this process's and others' (`unclean`, `unclean.<token>`).
    /// Found by a writer that is alone (`WriterSlot.alone`), they are those of runs that died.
    public func uncleanMarks() -> [String] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: root) else { return [] }
        return names.filter { $0 == CacheLayout.uncleanMarkPrefix || $0.hasPrefix(CacheLayout.uncleanMarkPrefix + ".") }
    }

    /// Removes the marks `uncleanMarks` found (their objects were swept).
    public func removeMarks(_ names: [String]) {
        for name in names { unlink(root + "/" + name) }
    }

    /// Deletes object files no row of `index` names (left by a run that stopped between
    /// installing and indexing them) and returns how many. Call only under the lock.
    public func sweepUnreferenced(_ index: CacheIndex) throws(CacheError) -> Int {
        let objects = ObjectDirectory(objectsDirectory: objectsDirectory)
        objects.preload()
        return removeUnreferenced(objects, rows: try index.allRows(validators: false))
    }

    /// Deletes the objects `objects` listed that no record names; how many went (0 when the
    /// folders were not listed).
    public func removeUnreferenced(_ objects: ObjectDirectory, rows: IndexRows) -> Int {
        let leftovers = objects.unreferenced(by: rows) ?? []
        for object in leftovers { remove(object) }
        return leftovers.count
    }

    /// Deletes every file in `tmp/`: leftovers of runs that crashed. Call only as the one writer
    /// (`WriterSlot.alone`): the files of a running writer are there too.
    public func removeStaleTemporaryFiles() -> Int {
        folders.removeTemporaryFiles()
    }

    /// The folders `mkdir -p` of `path` will make, from `path` up (empty when it exists).
    private static func missingFolders(_ path: String) -> [String] {
        var missing: [String] = []
        var folder = path
        var info = stat()
        while !folder.isEmpty, folder != "/", stat(folder, &info) != 0 {
            missing.append(folder)
            folder = PathName.parent(folder)
        }
        return missing
    }

    /// Flushes the parent of each folder made (`missingFolders`), so that their names are on the disk.
    private static func flushParents(of made: [String]) throws(CacheError) {
        for folder in made {
            let parent = PathName.parent(folder)
            do throws(SystemError) { try Durability.flushFolder(parent.isEmpty ? "." : parent) } catch { throw .system(error) }
        }
    }

    private static func reason(_ error: any Error) -> String {
        ErrorText.describe(error)
    }

    /// Whether `directory` lists all 256 fan-out folders (`00` … `ff`) as directories, not links:
    /// one read of the folder instead of a mkdir and an lstat for each. False when any is missing
    /// or of another kind, or the file system does not tell (`DT_UNKNOWN`).
    static func hasEveryFanOutFolder(_ directory: String) -> Bool {
        guard let folder = opendir(directory) else { return false }
        defer { closedir(folder) }
        // A folder lists each name once: 256 two-digit lowercase hex names are all of them.
        var count = 0
        while let entry = readdir(folder) {
            let isFanOut = DirectoryEntry.withName(entry) { name in
                name.count == 2 && Hex.value(name[0]).map(Hex.lowercaseDigit) == name[0]
                    && Hex.value(name[1]).map(Hex.lowercaseDigit) == name[1]
            }
            guard isFanOut else { continue }
            guard entry.pointee.d_type == UInt8(DT_DIR) else { return false }
            count += 1
        }
        return count == 256
    }

    /// Makes the folder unless it exists; true when it was made here.
    @discardableResult
    private static func makeDirectory(_ path: String, followLink: Bool = false) throws(CacheError) -> Bool {
        if mkdir(path, 0o755) == 0 { return true }
        if errno == EEXIST {
            var info = stat()
            let status = followLink ? stat(path, &info) : lstat(path, &info)
            if status == 0, (info.st_mode & S_IFMT) == S_IFDIR { return false }
            throw CacheError.unusable(
                path: path, reason: "exists and is not a directory\(followLink ? "" : " (symlinks are not followed inside the cache)")")
        }
        throw .system(SystemError("create", path))
    }
}

/// Numbers temporary files within this process.
private let temporaryCounter = Mutex<UInt64>(0)
private let temporaryPrefix = "dl-\(CacheLayout.processToken)-"
