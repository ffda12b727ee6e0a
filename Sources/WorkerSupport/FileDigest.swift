import Crypto
import FoundationEssentials
import Glibc

/// The one file hasher: a file's SHA-256 (lowercase hex) and size, read in chunks; for `verify`,
/// `push` and the manifests `worker manifest` writes.
public enum FileDigest {
    /// Why a file could not be read (strerror's words; a read error names the path).
    public struct Unreadable: Error, Sendable {
        public let message: String

        public init(_ message: String) {
            self.message = message
        }
    }

    /// SHA-256 and size of each file, `width` at a time.
    public static func hashAll(_ files: [(name: String, path: String)], width: Int) async -> [(String, Result<(String, Int64), Unreadable>)]
    {
        let width = max(1, width)
        return await withTaskGroup(of: (String, Result<(String, Int64), Unreadable>).self) { group in
            var results: [(String, Result<(String, Int64), Unreadable>)] = []
            var next = 0
            for _ in 0..<min(width, files.count) {
                let file = files[next]
                group.addTask { (file.name, Self.sha256(file.path)) }
                next += 1
            }
            for await result in group {
                results.append(result)
                if next < files.count {
                    let file = files[next]
                    group.addTask { (file.name, Self.sha256(file.path)) }
                    next += 1
                }
            }
            return results
        }
    }

    public static func sha256(_ path: String) -> Result<(String, Int64), Unreadable> {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return .failure(Unreadable(String(cString: strerror(errno)))) }
        defer { close(fd) }
        var hasher = SHA256()
        var size: Int64 = 0
        if case .failure(let failure) = FileChunks.read(
            fd, path: path, unreadable: Unreadable.init,
            { chunk in
                hasher.update(bufferPointer: chunk)
                size += Int64(chunk.count)
                return nil
            })
        {
            return .failure(failure)
        }
        return .success((Hex.encode(hasher.finalize()), size))
    }
}
