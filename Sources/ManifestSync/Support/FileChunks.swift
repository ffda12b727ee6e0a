import Foundation

/// Reads a file descriptor to its end in 64 KiB chunks (retrying EINTR), handing each chunk to
/// `body`; stops at the first error `body` returns. A read error names `path`.
enum FileChunks {
    static func read(_ fd: Int32, path: String, _ body: (UnsafeRawBufferPointer) -> FetchFailure?) -> Result<Void, FetchFailure> {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = Foundation.read(fd, buffer.baseAddress, buffer.count)
            if count == 0 { return .success(()) }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(FetchFailure(.io, "cannot read \(path): \(String(cString: strerror(errno)))"))
            }
            if let failure = body(UnsafeRawBufferPointer(rebasing: buffer[0..<count])) { return .failure(failure) }
        }
    }
}
