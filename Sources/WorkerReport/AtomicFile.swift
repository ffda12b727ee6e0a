import FoundationEssentials
import Glibc
import WorkerSupport

/// Writes a file by way of a temporary sibling and a rename, so readers never see half of it, nor
/// does the next boot after a power cut.
/// The sibling has a random name and is created exclusively without following links
/// (`mkstemp`'s rules): someone who can write the folder cannot aim the write elsewhere by
/// planting a symlink under a name they guessed.
public enum AtomicFile {
    public static func write(_ data: Data, to path: String, mode: mode_t? = nil) throws {
        try write(to: path, mode: mode) { output in try output(data) }
    }

    /// Writes what `produce` hands its output, piece by piece, then renames the file into place;
    /// the temporary file is removed when `produce` or a write fails.
    /// `mode`, when given, is the file's whatever the umask.
    public static func write(to path: String, mode: mode_t? = nil, _ produce: ((Data) throws -> Void) throws -> Void) throws {
        let url = URL(fileURLWithPath: path)
        let folder = url.deletingLastPathComponent().path
        var created: (fd: Int32, path: String)?
        for _ in 0..<16 {
            let candidate = folder + "/." + url.lastPathComponent + "." + randomSuffix() + ".tmp"
            let fd = open(candidate, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o666)
            if fd >= 0 { created = (fd, candidate); break }
            guard errno == EEXIST else { throw failure(path, errno) }
        }
        guard let (fd, temporary) = created else { throw failure(path, EEXIST) }
        do {
            if let mode, fchmod(fd, mode) != 0 { throw failure(path, errno) }
            try produce { data in
                guard data.withUnsafeBytes({ FileChunks.writeAll(fd, $0) }) else { throw failure(path, errno) }
            }
        } catch {
            close(fd)
            unlink(temporary)
            throw error
        }
        // On the disk before its name is: a power cut leaves the old file or the new one, never
        // a name on bytes that did not arrive; the folder is flushed so the new name stays.
        guard fsync(fd) == 0 else {
            let code = errno
            close(fd)
            unlink(temporary)
            throw failure(path, code)
        }
        close(fd)
        guard rename(temporary, url.path) == 0 else {
            let code = errno
            unlink(temporary)
            throw failure(path, code)
        }
        let parent = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard parent >= 0 else { return }
        defer { close(parent) }
        guard fsync(parent) == 0 else { throw failure(path, errno) }
    }

    /// Appends `data` to the existing file at `path` (GitHub's step summary, which the runner made).
    public static func append(_ data: Data, to path: String) throws {
        let fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC)
        guard fd >= 0 else { throw failure(path, errno) }
        let written = data.withUnsafeBytes { FileChunks.writeAll(fd, $0) }
        let code = errno
        guard close(fd) == 0, written else { throw failure(path, written ? errno : code) }
    }

    private static func randomSuffix() -> String {
        var generator = SystemRandomNumberGenerator()
        return String(generator.next() as UInt64, radix: 36)
    }

    private static func failure(_ path: String, _ code: Int32) -> CocoaError {
        CocoaError(.fileWriteUnknown, userInfo: ["NSLocalizedDescription": "cannot write \(path): \(String(cString: strerror(code)))"])
    }
}
