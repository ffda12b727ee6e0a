import FoundationEssentials
import Glibc

/// Descriptors of the two folders every download passes through, `tmp/` and `objects/sha256/`,
/// open while the store is: a temporary file is created and installed by names relative to them,
/// so the kernel walks one or two path components a call instead of the cache's whole path
/// (three walks a file; the renames alone were ~8 % of a 10k cold sync's CPU on tmpfs). Neither
/// may be a symlink (the store checked; `O_NOFOLLOW` again here).
final class StoreFolders: Sendable {
    let temporary: Int32
    let objects: Int32

    init(temporary temporaryPath: String, objects objectsPath: String) throws(CacheError) {
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

    /// `ab/abcdef…`: an object's name relative to `objects`.
    static func relativeObjectPath(_ sha256: String) -> String {
        sha256.prefix(2) + "/" + sha256
    }
}
