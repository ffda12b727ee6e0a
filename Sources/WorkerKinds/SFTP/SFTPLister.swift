import FoundationEssentials
import Glibc
import WorkerFetch
import WorkerManifest
import WorkerStore
import WorkerSupport

/// What `worker manifest sftp://HOST/FOLDER/` asks the server besides downloads, through the
/// run's transport and login: each folder's listing, walked below it, and each file's time (a
/// stat, through a HEAD: the listing gives minutes only). Symbolic links and special files are
/// left out, as a folder found twice would be. Each exchange is retried as a download is.
final class SFTPLister: FolderLister {
    private let access: SFTPAccess
    private let rewrite: URLRewrite
    private let store: ContentStore
    private let settings: FetchSettings
    private let engine: SingleEngine
    private let width: Int

    init(access: SFTPAccess, store: ContentStore, settings: FetchSettings, width: Int) throws(EngineStartFailure) {
        self.access = access
        rewrite = settings.locator.rewrite
        self.store = store
        self.settings = settings
        self.width = max(1, width)
        engine = try SingleEngine(settings: settings, width: self.width)
    }

    var noun: String { "files" }
    var storedHashSource: String? { nil }

    func close() async {
        await engine.close()
    }

    /// Every file below `folder`, folder by folder in name order, with its exact time.
    func list(_ folder: String) async -> Result<[ListedFile], FetchFailure> {
        var files: [(url: String, relative: String, size: Int64)] = []
        var folders: [String] = [""]
        while let relative = folders.popLast() {
            let text: String
            switch await body(folder + Self.encoded(relative)) {
            case .failure(let failure): return .failure(failure)
            case .success(let read): text = read
            }
            let items = SFTPListing.parse(text).items.sorted { $0.name < $1.name }
            for item in items {
                let path = relative + item.name
                switch item.kind {
                case .file: files.append((folder + Self.encoded(path), path, item.size))
                case .folder: folders.append(path + "/")
                case .link, .other: continue
                }
            }
        }
        // Each file's own time, `width` at a time.
        let times = await withTaskGroup(of: (Int, Result<String, FetchFailure>).self) { group in
            var times = [Result<String, FetchFailure>?](repeating: nil, count: files.count)
            var next = 0
            func add() {
                guard next < files.count else { return }
                let (position, url) = (next, files[next].url)
                next += 1
                group.addTask { (position, await self.lastModified(url)) }
            }
            for _ in 0..<width { add() }
            for await (position, time) in group {
                times[position] = time
                add()
            }
            return times
        }
        var listed: [ListedFile] = []
        for (position, file) in files.enumerated() {
            switch times[position] {
            case .success(let time)?:
                listed.append(
                    ListedFile(
                        url: file.url, relative: file.relative, etag: "", size: file.size, lastModified: time,
                        storesSHA256: false))
            case .failure(let failure)?: return .failure(failure)
            case nil: return .failure(FetchFailure(.io, "no time was read for \(file.url)"))
            }
        }
        return .success(listed)
    }

    /// Never: an SFTP server keeps no hash of its files.
    func storedSHA256(of file: ListedFile) async -> Result<String?, FetchFailure> { .success(nil) }

    /// A path below the folder as a URL's path (`/` kept).
    private static func encoded(_ path: String) -> String {
        LiteralPath.percentEncoded(path, keepingSlashes: true)
    }

    /// The request for `url` as downloads send it: after `--rewrite`, with the login.
    private func request(_ url: String, method: TransferMethod) -> (TransferRequest, String) {
        var memo = OriginMemo()
        let location = access.location(url, rewrite: rewrite, origin: nil, expected: nil, memo: &memo)
        var request = TransferRequest(url: location.url, headers: [], deadline: 0, origin: location.origin)
        request.method = method
        request.ssh = location.ssh
        return (request, location.url)
    }

    /// A file's time as its stat says it (an HTTP date).
    private func lastModified(_ url: String) async -> Result<String, FetchFailure> {
        let (request, located) = request(url, method: .head)
        let reply = await engine.exchange(request) { deadline in .statusAndHeader("last-modified", url: located, deadline: deadline) }
        switch reply.result {
        case .success(.statusAndHeader(_, let time?)): return .success(time)
        case .success: return .failure(FetchFailure(.connection, "the server gave no time for \(Redact.url(url))"))
        case .failure(let failure): return .failure(failure)
        }
    }

    /// A folder's listing, as text.
    private func body(_ url: String) async -> Result<String, FetchFailure> {
        await engine.document(request(url, method: .get).0, store: store, maxSize: 256 << 20).mapError { problem in
            if case .failed(let failure) = problem { return failure }
            return FetchFailure(.connection, "an unexpected answer to the listing of \(Redact.url(url))")
        }
    }
}
