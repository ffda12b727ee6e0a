import Crypto
import FoundationEssentials
import Glibc
import WorkerFetch
import WorkerManifest
import WorkerStore
import WorkerSupport

/// An unchanged remote manifest at the cost of one exchange: the copy accepted before is read while
/// one engine asks the manifest's URL with its validators; a 304 confirms the copy, anything else
/// sends the run the usual way (fetched anew, parsed again).
extension SyncEngine {
    /// What a remote manifest accepted before is checked by: its URL and the validators and
    /// object of the cached response.
    struct UnchangedCheck: Sendable {
        let url: String
        let etag: String?
        let lastModified: String?
        let object: String
    }

    /// When every argument is an http(s) manifest accepted before whose accepted copy is the
    /// cached response (same object, validators kept) and whose kept signature still verifies
    /// with today's keys: the copies, opened, and what confirms them. nil otherwise.
    func acceptedCopies(_ arguments: [String]) -> (opened: OpenedManifests, checks: [UnchangedCheck])? {
        guard !arguments.isEmpty, !options.offline, !options.refresh, options.trust.signature == nil,
              arguments.allSatisfy({ URLKinds.kind(of: $0)?.id == .http }), let index = try? acceptedIndex() else { return nil }
        var opened = OpenedManifests()
        var checks: [UnchangedCheck] = []
        for argument in arguments {
            guard let accepted = try? index.acceptedManifest(argument), let row = try? index.record(url: argument),
                  row.object == accepted.object, row.etag != nil || row.lastModified != nil else { return nil }
            let copy = Self.acceptedCopyPath(options.cacheDirectory, source: argument)
            guard let bytes = FileManager.default.contents(atPath: copy).map({ [UInt8]($0) }),
                  Hex.encode(SHA256.hash(data: bytes)) == accepted.object else { return nil }
            var signature: [UInt8]?
            if !options.trust.keys.isEmpty {
                guard let kept = FileManager.default.contents(atPath: copy + ".sig").map({ [UInt8]($0) }),
                      case .success = options.trust.keys.verify(bytes, signature: kept) else { return nil }
                signature = kept
            }
            opened.manifests.append(.init(argument: argument, path: copy, source: argument, isRemote: true,
                                          object: accepted.object, signature: signature, fromCopy: false))
            opened.fetchedURLs.append(argument)
            checks.append(UnchangedCheck(url: argument, etag: row.etag, lastModified: row.lastModified, object: row.object))
        }
        return (opened, checks)
    }

    /// Whether every manifest is unchanged at its URL (a 304 to its conditional request).
    func unchanged(_ checks: [UnchangedCheck]) async -> Bool {
        guard let store = try? ContentStore(root: options.cacheDirectory),
              let engine = try? SingleEngine(settings: options.fetch) else { return false }
        var all = true
        for check in checks where all {
            all = await engine.isUnchanged(url: check.url, etag: check.etag, lastModified: check.lastModified, store: store)
        }
        await engine.close()
        return all
    }

    /// The object of an http(s) document the cache holds, when a conditional request says it is
    /// unchanged (304): one exchange on one engine, and no write (the usual way, `get`'s one-entry
    /// sync, commits even a 304). nil when it changed, failed or is not cached: fetch it as usual.
    func unchangedDocument(_ url: String) async -> String? {
        guard URLKinds.kind(of: url)?.id == .http, !options.offline, !options.refresh,
              let index = try? acceptedIndex(), let row = try? index.record(url: url), row.etag != nil || row.lastModified != nil
        else { return nil }
        let path = CacheLayout.objectPath(options.cacheDirectory, row.object)
        var info = stat()
        guard stat(path, &info) == 0, Int64(info.st_size) == row.size,
              await unchanged([UnchangedCheck(url: url, etag: row.etag, lastModified: row.lastModified, object: row.object)])
        else { return nil }
        return path
    }
}
