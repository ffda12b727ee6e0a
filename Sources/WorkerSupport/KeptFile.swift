import Glibc

/// A small file the program kept or was given (an accepted manifest's copy, a signature), read
/// whole without following a link at its last component: a link another user planted is not
/// read through.
public enum KeptFile {
    /// The file's bytes; nil when it is missing, a link, not a regular file, or over `limit` bytes.
    public static func read(_ path: String, upTo limit: Int = 1 << 30) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size <= limit else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var done = 0
        while done < bytes.count {
            let got = bytes.withUnsafeMutableBytes { buffer in Glibc.read(descriptor, buffer.baseAddress! + done, buffer.count - done) }
            if got < 0, errno == EINTR { continue }
            guard got > 0 else { return nil }
            done += got
        }
        return bytes
    }
}
