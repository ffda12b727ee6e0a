import FoundationEssentials
import Glibc

/// A cached object placed at another name — in a tree's version, in an export's folder — as a
/// hard link (read-only, no second copy), or as a copy where no link can be made there (another
/// file system, a link count at its limit): a reflink first where the file system offers one.
public enum LinkOrCopy {
    public enum Placed {
        case linked, copied
    }

    /// Places `source` at `target` (relative to the folder `folder`, or absolute with
    /// `AT_FDCWD`); nil when `source` is gone (a writer replaced that version meanwhile).
    /// `flushCopy`: a copy's bytes are flushed before it is done (where one syncfs does not).
    public static func place(
        _ source: String, in folder: Int32, _ target: String, shownAs shown: String,
        flushCopy: Bool = false
    ) throws(CacheError) -> Placed? {
        if linkat(AT_FDCWD, source, folder, target, 0) == 0 { return .linked }
        if errno == ENOENT, access(source, F_OK) != 0 { return nil }
        guard [EXDEV, EPERM, EMLINK, EACCES, EROFS].contains(errno) else { throw .system(SystemError("link", shown)) }
        try copy(source, into: folder, target, shownAs: shown, flush: flushCopy)
        return .copied
    }

    /// Copies `source` to `target` (relative to `folder`), read-only like the objects.
    private static func copy(
        _ source: String, into folder: Int32, _ target: String, shownAs shown: String,
        flush: Bool
    ) throws(CacheError) {
        let input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw .system(SystemError("open", source)) }
        defer { Glibc.close(input) }
        let output = openat(folder, target, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o444)
        guard output >= 0 else { throw .system(SystemError("create", shown)) }
        defer { Glibc.close(output) }
        try copyBytes(input, source, output, shown)
        if flush, fdatasync(output) != 0 { throw .system(SystemError("flush", shown)) }
    }

    private static func copyBytes(_ input: Int32, _ source: String, _ output: Int32, _ shown: String) throws(CacheError) {
        // FICLONE: the file system shares the blocks (btrfs, XFS); elsewhere a plain copy.
        if ioctl(output, 0x4004_9409, input) == 0 { return }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if count == 0 { return }
            guard count > 0 else {
                if errno == EINTR { continue }
                throw .system(SystemError("read", source))
            }
            var written = 0
            while written < count {
                let step = buffer.withUnsafeBytes { write(output, $0.baseAddress! + written, count - written) }
                guard step > 0 else {
                    if step < 0, errno == EINTR { continue }
                    throw .system(SystemError("write", shown))
                }
                written += step
            }
        }
    }
}
