import FoundationEssentials
import Glibc
import WorkerManifest
import WorkerSupport

/// The one way a local entry's file is opened, for every command that reads one (`sync`, `get`,
/// `verify --repair`): it must resolve, symlinks followed, to a regular file inside its
/// manifest's folder. The open never blocks (a FIFO or a device would hold the run and its lock
/// forever) and the file is checked by its descriptor, not its name, so nothing can be swapped in
/// between.
extension LocalFile {
    /// An open regular file and its size.
    struct Opened {
        let fd: Int32
        let size: Int64
    }

    /// Opens the file `url` names when it is a regular file inside `root` (an absolute folder,
    /// symlinks resolved); the caller closes it.
    static func open(_ url: String, root: String) -> Result<Opened, FetchFailure> {
        let path = self.path(of: url) ?? url
        guard let real = realpath(path, nil) else {
            return .failure(FetchFailure(.io, "cannot read \(Sanitize.terminal(path)): \(String(cString: strerror(errno)))"))
        }
        let resolved = String(cString: real)
        free(real)
        guard isInside(resolved, root) else {
            return .failure(FetchFailure(.io, "\(Sanitize.terminal(path)) resolves outside the manifest's folder"))
        }
        // O_NONBLOCK: opening a FIFO for reading would wait for a writer. O_NOFOLLOW: the
        // resolved path has no symlink left; one put there since is refused.
        let fd = Glibc.open(resolved, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else {
            return .failure(FetchFailure(.io, "cannot read \(Sanitize.terminal(path)): \(String(cString: strerror(errno)))"))
        }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            return .failure(FetchFailure(.io, "\(Sanitize.terminal(path)) is not a regular file"))
        }
        // What was opened, by its descriptor: a folder on the way swapped for a symlink after
        // realpath would show here.
        if let opened = openedPath(fd), !isInside(opened, root) {
            close(fd)
            return .failure(FetchFailure(.io, "\(Sanitize.terminal(path)) resolves outside the manifest's folder"))
        }
        return .success(Opened(fd: fd, size: Int64(info.st_size)))
    }

    /// The path the kernel has for an open descriptor (Linux's /proc), or nil where it cannot say.
    private static func openedPath(_ fd: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
