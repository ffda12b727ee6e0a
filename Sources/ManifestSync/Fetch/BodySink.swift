import Foundation

/// Writes a body to its temporary file while hashing it, enforcing the size limit. Small chunks
/// are gathered and written together: a typical small body costs one write(2).
struct BodySink {
    let fd: Int32
    let path: String
    let expected: ContentHash?
    let maxSize: Int64
    private(set) var size: Int64 = 0
    private var hasher: BodyHasher
    private var buffer: [UInt8] = []
    private var closed = false
    private static let bufferLimit = 64 << 10

    init(fd: Int32, path: String, expected: ContentHash?, maxSize: Int64) {
        self.fd = fd
        self.path = path
        self.expected = expected
        self.maxSize = maxSize
        hasher = BodyHasher(also: expected?.algorithm)
    }

    /// Appends bytes; returns a failure (and stops) when the limit is passed or the write fails.
    mutating func write(_ bytes: UnsafeRawBufferPointer) -> FetchFailure? {
        size += Int64(bytes.count)
        if size > maxSize {
            return FetchFailure(.tooLarge, "body exceeds the limit of \(maxSize) bytes")
        }
        hasher.update(bytes)
        if buffer.count + bytes.count <= Self.bufferLimit {
            if buffer.capacity == 0 { buffer.reserveCapacity(Self.bufferLimit) }
            buffer.append(contentsOf: bytes)
            return nil
        }
        if let failure = drain() { return failure }
        guard bytes.count <= Self.bufferLimit else { return writeAll(bytes) }
        buffer.append(contentsOf: bytes)
        return nil
    }

    private mutating func drain() -> FetchFailure? {
        guard !buffer.isEmpty else { return nil }
        let failure = buffer.withUnsafeBytes { writeAll($0) }
        buffer.removeAll(keepingCapacity: true)
        return failure
    }

    private func writeAll(_ bytes: UnsafeRawBufferPointer) -> FetchFailure? {
        var offset = 0
        while offset < bytes.count {
            let written = Foundation.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                return FetchFailure(.io, "cannot write \(path): \(String(cString: strerror(errno)))")
            }
            offset += written
        }
        return nil
    }

    /// Writes what is buffered, closes the file and checks the digest against the expected hash.
    mutating func close() -> Result<(sha256: String, actual: ContentHash?), FetchFailure> {
        if let failure = drain() {
            discard()
            return .failure(failure)
        }
        closed = true
        if Foundation.close(fd) != 0 {
            let reason = String(cString: strerror(errno))
            unlink(path)
            return .failure(FetchFailure(.io, "cannot write \(path): \(reason)"))
        }
        let digests = hasher.finalize(for: expected?.algorithm)
        if let expected, let actual = digests.expected, actual != expected {
            unlink(path)
            return .failure(FetchFailure(.hashMismatch, "expected \(expected) got \(actual)"))
        }
        return .success((digests.sha256, digests.expected))
    }

    /// Closes (if open) and deletes the temporary file.
    mutating func discard() {
        if !closed { Foundation.close(fd); closed = true }
        unlink(path)
    }
}
