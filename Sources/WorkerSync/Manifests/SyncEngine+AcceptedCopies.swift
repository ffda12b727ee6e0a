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
        guard !arguments.isEmpty, !options.offline, !options.refresh, !options.refreshUnpinned, options.trust.signature == nil,
            arguments.allSatisfy({ URLKinds.kind(of: $0)?.id == .http }), let index = try? acceptedIndex()
        else { return nil }
        var opened = OpenedManifests()
        var checks: [UnchangedCheck] = []
        for argument in arguments {
            guard let accepted = try? index.acceptedManifest(argument), let row = try? index.record(url: argument),
                row.object == accepted.object, row.etag != nil || row.lastModified != nil
            else { return nil }
            guard let (copy, bytes) = Self.readAcceptedCopy(options.cacheDirectory, source: argument, object: accepted.object)
            else { return nil }
            var signature: [UInt8]?
            var check: SignatureCheck?
            if !options.trust.keys.isEmpty {
                guard let kept = KeptFile.read(copy + ".sig"),
                    case .success(let verified) = options.trust.keys.verify(bytes, signature: kept)
                else { return nil }
                (signature, check) = (kept, verified)
            }
            opened.manifests.append(
                .init(
                    argument: argument, path: copy, source: argument, isRemote: true,
                    object: accepted.object, signature: signature, fromCopy: false,
                    readAs: Self.fileName(of: argument), signer: check?.signer, signedFile: check?.file))
            opened.fetchedURLs.append(argument)
            // The signature beside it is the cache's too (kept, never an orphan).
            opened.fetchedURLs += options.trust.keys.signatureSuffixes.map { Self.beside(argument, suffix: $0) }
            checks.append(UnchangedCheck(url: argument, etag: row.etag, lastModified: row.lastModified, object: row.object))
        }
        return (opened, checks)
    }

    /// Asks each manifest's URL with its validators, through the cache (one run): unchanged when
    /// every one is still the accepted copy; what was fetched either way (a 200 is the new copy,
    /// read by the run that follows without asking again).
    func confirm(_ checks: [UnchangedCheck]) async -> ManifestConfirmation {
        guard let documents = try? await fetchDocuments(checks.map(\.url)) else { return ManifestConfirmation(unchanged: false) }
        let unchanged = checks.allSatisfy { check in
            guard case .success(let path)? = documents[check.url] else { return false }
            return path == CacheLayout.objectPath(options.cacheDirectory, check.object)
        }
        return ManifestConfirmation(unchanged: unchanged, documents: documents)
    }

    /// Whether every manifest is unchanged at its URL (a 304 to its conditional request), asked
    /// without a write (commands that only read).
    func unchanged(_ checks: [UnchangedCheck]) async -> Bool {
        guard let store = try? ContentStore(root: options.cacheDirectory),
            let engine = try? SingleEngine(settings: options.fetch)
        else { return false }
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
        guard URLKinds.kind(of: url)?.id == .http, !options.offline, !options.refresh, !options.refreshUnpinned,
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

/// What asking the publishers found: whether every manifest is the copy accepted before, and
/// each URL's document as fetched (or why not).
struct ManifestConfirmation: Sendable {
    let unchanged: Bool
    var documents: [String: Result<String, DocumentFailure>] = [:]
}
