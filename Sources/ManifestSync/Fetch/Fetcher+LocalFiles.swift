import FoundationEssentials
import Glibc
import Dispatch

/// `file://` entries (manifests without `base_url` name files in their own folder): read off the
/// fetch engine's thread and off Swift's cooperative pool, which a large file would stall.
extension Fetcher {
    /// Reads `request`'s file on a Dispatch queue of its own and calls `done` with the outcome
    /// and the bytes read. A stop of `control` and the entry timeout end the read between chunks.
    func readLocal(_ request: FetchRequest, control: FetchControl,
                   done: @escaping @Sendable (Result<FetchedBody, FetchFailure>, Int64) -> Void) {
        let deadline = Monotonic.now() + settings.entryTimeout
        Self.localFiles.async {
            var received: Int64 = 0
            let result = self.readLocal(request, control: control, deadline: deadline, bytes: &received)
            done(result, received)
        }
    }

    /// Blocking reads; a few at a time, like the downloads beside them.
    private static let localFiles = DispatchQueue(label: "worker.local-files", qos: .utility, attributes: .concurrent)

    private func readLocal(_ request: FetchRequest, control: FetchControl, deadline: Double,
                           bytes: inout Int64) -> Result<FetchedBody, FetchFailure> {
        // Without the folder it must stay in (a row of the index whose manifest is unknown), a
        // local file is not read at all.
        guard let root = request.localRoot else {
            return .failure(FetchFailure(.io, "a local file is read only for the manifest whose folder holds it"))
        }
        let input: LocalFile.Opened
        switch LocalFile.open(request.url, root: root) {
        case .failure(let failure): return .failure(failure)
        case .success(let opened): input = opened
        }
        defer { close(input.fd) }
        guard input.size <= settings.maxSize else {
            return .failure(FetchFailure(.tooLarge, "\(input.size) bytes exceeds the limit of \(settings.maxSize) bytes"))
        }
        let file: (fd: Int32, path: String)
        do { file = try store.makeTemporaryFile() } catch { return .failure(FetchFailure(storing: error)) }
        var sink = BodySink(fd: file.fd, path: file.path, expected: request.expected, maxSize: settings.maxSize)
        let copied = FileChunks.read(input.fd, path: Sanitize.terminal(request.url)) { chunk in
            if control.isStopped { return FetchFailure(.cancelled, control.stopReason) }
            if Monotonic.now() > deadline {
                return FetchFailure(.timeout, "reading the file took longer than the entry timeout (\(settings.entryTimeout) s)")
            }
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
