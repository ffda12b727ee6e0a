import FoundationEssentials
import Glibc
import Dispatch

/// `file://` entries (manifests without `base_url` name files in their own folder): read off the
/// fetch engine's thread and off Swift's cooperative pool, which a large file would stall.
extension Fetcher {
    /// Reads `request`'s file on a Dispatch queue of its own and calls `done` with the outcome
    /// and the bytes read.
    func readLocal(_ request: FetchRequest, done: @escaping @Sendable (Result<FetchedBody, FetchFailure>, Int64) -> Void) {
        Self.localFiles.async {
            var received: Int64 = 0
            let result = self.readLocal(request, bytes: &received)
            done(result, received)
        }
    }

    /// Blocking reads; a few at a time, like the downloads beside them.
    private static let localFiles = DispatchQueue(label: "worker.local-files", qos: .utility, attributes: .concurrent)

    private func readLocal(_ request: FetchRequest, bytes: inout Int64) -> Result<FetchedBody, FetchFailure> {
        let path = String(request.url.dropFirst("file://".count))
        guard let real = realpath(path, nil) else {
            return .failure(FetchFailure(.io, "cannot read \(path): \(String(cString: strerror(errno)))"))
        }
        let resolved = String(cString: real)
        free(real)
        if let root = request.localRoot, !resolved.hasPrefix(root + "/") {
            return .failure(FetchFailure(.io, "\(path) resolves outside the manifest's folder"))
        }
        let input = open(resolved, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else {
            return .failure(FetchFailure(.io, "cannot read \(path): \(String(cString: strerror(errno)))"))
        }
        defer { close(input) }
        var info = stat()
        guard fstat(input, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            return .failure(FetchFailure(.io, "\(path) is not a regular file"))
        }
        guard Int64(info.st_size) <= settings.maxSize else {
            return .failure(FetchFailure(.tooLarge, "\(info.st_size) bytes exceeds the limit of \(settings.maxSize) bytes"))
        }
        let file: (fd: Int32, path: String)
        do { file = try store.makeTemporaryFile() } catch { return .failure(FetchFailure(storing: error)) }
        var sink = BodySink(fd: file.fd, path: file.path, expected: request.expected, maxSize: settings.maxSize)
        let copied = FileChunks.read(input, path: path) { chunk in
            bytes += Int64(chunk.count)
            return sink.write(chunk)
        }
        if case .failure(let failure) = copied {
            sink.discard()
            return .failure(failure)
        }
        let closed = sink.close()
        return closed.map { digests in
            FetchedBody(temporaryPath: sink.path, sha256: digests.sha256, size: sink.size, etag: nil, lastModified: nil)
        }
    }
}
