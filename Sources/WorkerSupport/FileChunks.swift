import FoundationEssentials
import Glibc

/// Reads a file descriptor to its end in 64 KiB chunks (retrying EINTR), handing each chunk to
/// `body`; stops at the first error `body` returns. A read error is `unreadable`'s, given words
/// that name `path`. And the one loop that writes all of a buffer.
public enum FileChunks {
    /// Writes all of `bytes` to `fd` (at `position` in the file when given, else where it
    /// stands), again after a signal or a short write; false (errno set) when a write fails.
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at position: Int? = nil) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        var offset = 0
        while offset < bytes.count {
            let count =
                position.map { Glibc.pwrite(fd, base + offset, bytes.count - offset, off_t($0 + offset)) }
                ?? Glibc.write(fd, base + offset, bytes.count - offset)
            if count < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += count
        }
        return true
    }

    public static func read<Failure: Error>(
        _ fd: Int32, path: String, unreadable: (String) -> Failure,
        _ body: (UnsafeRawBufferPointer) -> Failure?
    ) -> Result<Void, Failure> {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if count == 0 { return .success(()) }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(unreadable("cannot read \(path): \(String(cString: strerror(errno)))"))
            }
            if let failure = body(UnsafeRawBufferPointer(rebasing: buffer[0..<count])) { return .failure(failure) }
        }
    }
}
