import FoundationEssentials
import Glibc
import Synchronization
import WorkerSupport

/// Descriptors of the two folders every download passes through, `tmp/` and `objects/sha256/`,
/// open while the store is: a temporary file is created and installed by names relative to them,
/// so the kernel walks one or two path components a call instead of the cache's whole path
/// (three walks a file; the renames alone were ~8 % of a 10k cold sync's CPU on tmpfs). Neither
/// may be a symlink (the store checked; `O_NOFOLLOW` again here).
final class StoreFolders: Sendable {
    let temporary: Int32
    let objects: Int32
    /// The fan-out folders known to be there (made or checked), by their first byte.
    private let present: Mutex<[Bool]>

    /// `fanOutComplete`: all 256 fan-out folders are there (checked); else they are made as
    /// needed and by `completeFanOut`.
    init(temporary temporaryPath: String, objects objectsPath: String, fanOutComplete: Bool) throws(CacheError) {
        present = Mutex([Bool](repeating: fanOutComplete, count: 256))
        let flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
        temporary = open(temporaryPath, flags)
        guard temporary >= 0 else { throw .system(SystemError("open", temporaryPath)) }
        objects = open(objectsPath, flags)
        guard objects >= 0 else {
            let error = SystemError("open", objectsPath)
            close(temporary)
            throw .system(error)
        }
    }

    deinit {
        close(temporary)
        close(objects)
    }

    /// Makes the fan-out folder of `sha256` (`ab/`) unless it is known to be there; true when it
    /// is a folder, false (errno set) when it cannot be made or something else has its name (a
    /// link is not followed).
    func ensureFanOutFolder(for sha256: String) -> Bool {
        var name = sha256
        let slot = name.withUTF8 { utf8 -> Int? in
            guard utf8.count >= 2, let high = Hex.value(utf8[0]), let low = Hex.value(utf8[1]) else { return nil }
            return Int(high << 4 | low)
        }
        guard let slot else {
            errno = ENOENT
            return false
        }
        return ensureFanOutFolder(slot)
    }

    /// Makes the fan-out folders not known to be there, so that a cache a run leaves has all 256
    /// (one that cannot be made is left to the next run's check).
    func completeFanOut() {
        for slot in 0..<256 { _ = ensureFanOutFolder(slot) }
    }

    private func ensureFanOutFolder(_ slot: Int) -> Bool {
        if present.withLock({ $0[slot] }) { return true }
        let prefix = Hex.encode([UInt8(slot)])
        if mkdirat(objects, prefix, 0o755) != 0 {
            guard errno == EEXIST else { return false }
            var info = stat()
            guard fstatat(objects, prefix, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return false }
            guard (info.st_mode & S_IFMT) == S_IFDIR else {
                errno = ENOTDIR
                return false
            }
        }
        present.withLock { $0[slot] = true }
        return true
    }

    /// Deletes the files in `tmp/` through the descriptor opened at the start (never a link
    /// planted since in its place); folders in it are left. How many went.
    func removeTemporaryFiles() -> Int {
        let listing = dup(temporary)
        guard listing >= 0, let folder = fdopendir(listing) else {
            if listing >= 0 { close(listing) }
            return 0
        }
        defer { closedir(folder) }
        rewinddir(folder)
        // Names as bytes (a file name need not be UTF-8), without "." and "..".
        var names: [[CChar]] = []
        while let entry = readdir(folder) {
            let name = DirectoryEntry.withName(entry) { $0.map { CChar(bitPattern: $0) } }
            if name != [46], name != [46, 46] { names.append(name + [0]) }
        }
        var removed = 0
        for name in names where unlinkat(temporary, name, 0) == 0 { removed += 1 }
        return removed
    }

    /// `ab/abcdef…`: an object's name relative to `objects`.
    static func relativeObjectPath(_ sha256: String) -> String {
        var path = String()
        path.reserveCapacity(3 + sha256.utf8.count)
        path += sha256.prefix(2)
        path += "/"
        path += sha256
        return path
    }
}
