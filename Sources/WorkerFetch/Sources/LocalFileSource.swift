import FoundationEssentials
import Glibc
import WorkerManifest
import WorkerStore
import WorkerSupport

/// `file://` entries (manifests without `base_url` name files in their own folder): a file must
/// stay inside its manifest's folder (`LocalFile.open`), and is read off the fetch engine's thread
/// and off Swift's cooperative pool, which a large file would stall. `sync`, `get` and
/// `verify --repair` read local entries only through this source.
struct LocalFileSource: ContentSource {
    let store: ContentStore
    let settings: FetchSettings
    /// Folders a request without a manifest folder of its own may read from (`verify --repair`:
    /// the folders of the manifests synced into the cache); a file in none of them is not read.
    let knownFolders: [String]

    var kind: SourceKind { .local }

    func serves(_ request: FetchRequest) -> Bool {
        LocalFile.isLocal(request.url)
    }

    /// Reads the file on a thread of the local files' own. A stop of the lane's control and the entry
    /// timeout end the read between chunks.
    func fetch(_ request: FetchRequest, lane: FetchLane, done: @escaping @Sendable (SourceOutcome) -> Void) {
        let deadline = Monotonic.now() + settings.entryTimeout
        Self.localFiles.async {
            var received: Int64 = 0
            let result = read(request, control: lane.control, deadline: deadline, bytes: &received)
            done(SourceOutcome(result.map(Delivery.body), attempts: 1, bytes: received))
        }
    }

    /// Blocking reads, as many at a time as the schedule starts at most.
    private static let localFiles = ThreadQueue(name: "worker.local", limit: DownloadSchedule.localFilesAtOnce)

    /// The folder `request`'s file must stay inside: its manifest's, else a known folder holding it.
    private func root(for request: FetchRequest) -> String? {
        if let root = request.localRoot { return root }
        guard let path = LocalFile.path(of: request.url) else { return nil }
        return knownFolders.first { LocalFile.isInside(path, $0) }
    }

    private func read(
        _ request: FetchRequest, control: StopRequest, deadline: Double,
        bytes: inout Int64
    ) -> Result<FetchedBody, FetchFailure> {
        // Without the folder it must stay in (a row of the index whose manifest is unknown), a
        // local file is not read at all.
        guard let root = root(for: request) else {
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
        let copied = FileChunks.read(input.fd, path: Sanitize.terminal(request.url), unreadable: { FetchFailure(.io, $0) }) { chunk in
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
