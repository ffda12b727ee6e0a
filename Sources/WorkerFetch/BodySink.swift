import FoundationEssentials
import Glibc
import WorkerManifest
import WorkerStore
import WorkerSupport

/// Writes a body to its temporary file while hashing it, enforcing the size limit. Each chunk is
/// written as it comes, with no copy: a small body arrives as one chunk, so it costs one write(2).
struct BodySink {
    let fd: Int32
    let path: String
    let expected: ContentHash?
    let maxSize: Int64
    private(set) var size: Int64 = 0
    private var hasher: BodyHasher
    /// Hashes on a thread of its own (a large body): then `hasher` is in it until `close`.
    private var pipeline: HashPipeline?
    private var closed = false

    /// Bodies declared at least this long are hashed beside their download (`HashPipeline`).
    static let pipelineThreshold: Int64 = 8 << 20

    init(fd: Int32, path: String, expected: ContentHash?, maxSize: Int64, declaredSize: Int64? = nil) {
        self.fd = fd
        self.path = path
        self.expected = expected
        self.maxSize = maxSize
        hasher = BodyHasher(also: expected?.algorithm)
        if let declaredSize, declaredSize >= Self.pipelineThreshold {
            // A hasher of its own, handed over whole (`hasher` stays unused until `close`).
            pipeline = HashPipeline(BodyHasher(also: expected?.algorithm))
        }
    }

    /// A sink that continues the body kept at `path` (its `offset` bytes are hashed again first,
    /// so the final digest covers every byte).
    static func resuming(path: String, offset: Int64, expected: ContentHash?, maxSize: Int64) -> Result<BodySink, FetchFailure> {
        let fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { return .failure(FetchFailure(.io, "cannot reopen \(path): \(String(cString: strerror(errno)))")) }
        // Bytes are appended here before any hash check: only to a file of ours that nothing
        // else names (a hard link planted in partial/ would have them written into its target).
        guard OwnFile.isPrivate(fd) else {
            Glibc.close(fd)
            return .failure(FetchFailure(.io, "\(path) is not a file this cache made (another name links to it, or another user owns it)"))
        }
        var sink = BodySink(fd: fd, path: path, expected: expected, maxSize: maxSize)
        var hasher = sink.hasher
        var total: Int64 = 0
        let read = FileChunks.read(fd, path: path, unreadable: { FetchFailure(.io, $0) }) { chunk in
            guard total + Int64(chunk.count) <= offset else { return FetchFailure(.io, "\(path) grew while it was read") }
            hasher.update(chunk)
            total += Int64(chunk.count)
            return nil
        }
        guard case .success = read, total == offset, lseek(fd, off_t(offset), SEEK_SET) == off_t(offset) else {
            Glibc.close(fd)
            return .failure(FetchFailure(.io, "cannot resume from \(path)"))
        }
        sink.hasher = hasher
        sink.size = offset
        return .success(sink)
    }

    /// Closes the file and leaves it where it is (a part kept to be resumed).
    mutating func keep() {
        if !closed { Glibc.close(fd); closed = true }
    }

    /// A write that failed: a full disk in the words the report uses, anything else with its
    /// error.
    static func writeFailure(_ path: String, _ code: Int32) -> FetchFailure {
        if code == ENOSPC || code == EDQUOT {
            return FetchFailure(.io, "no space left on the device (writing \(path))", detail: .noSpace)
        }
        return FetchFailure(.io, "cannot write \(path): \(String(cString: strerror(code)))")
    }

    /// Appends bytes; returns a failure (and stops) when the limit is passed or the write fails.
    mutating func write(_ bytes: UnsafeRawBufferPointer) -> FetchFailure? {
        size += Int64(bytes.count)
        if size > maxSize {
            return FetchFailure(.tooLarge, "body exceeds the limit of \(maxSize) bytes")
        }
        if let pipeline { pipeline.update(bytes) } else { hasher.update(bytes) }
        guard FileChunks.writeAll(fd, bytes) else { return Self.writeFailure(path, errno) }
        return nil
    }

    /// Closes the file and checks the digest against the expected hash.
    mutating func close() -> Result<(sha256: String, actual: ContentHash?), FetchFailure> {
        closed = true
        if Glibc.close(fd) != 0 {
            let code = errno
            unlink(path)
            return .failure(Self.writeFailure(path, code))
        }
        if let pipeline { hasher = pipeline.finish() }
        let digests = hasher.finalize(for: expected?.algorithm)
        if let expected, let actual = digests.expected, actual != expected {
            unlink(path)
            return .failure(.hashMismatch(expected: expected, actual: actual))
        }
        return .success((digests.sha256, digests.expected))
    }

    /// Closes (if open) and deletes the temporary file.
    mutating func discard() {
        if !closed { Glibc.close(fd); closed = true }
        unlink(path)
    }
}
