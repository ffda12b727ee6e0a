import Crypto
import FoundationEssentials
import Glibc
import Logging
import WorkerFetch
import WorkerManifest
import WorkerReport
import WorkerStore
import WorkerSupport

/// Manifests by URL, and signed manifests (TUF's attacks: an arbitrary manifest, a rollback to an
/// older signed one, a freeze on a stale one). A remote manifest is fetched through the engine
/// like `get` (rewrites, CA options, redirects; its ETag kept in the index and asked for with a
/// conditional request each run); with trusted keys its detached signature is verified before
/// anything is planned; after the load, `serial` and `expires` are checked against what the cache
/// last accepted, and the accepted copy is kept beside the index (`manifests/`) to serve when the
/// manifest cannot be fetched, for `--manifest-max-age`.
extension SyncEngine {
    /// Whether an argument names a remote manifest.
    public static func isRemoteManifest(_ argument: String) -> Bool {
        URLResolver.hasHTTPScheme(argument) || S3URL.isS3(argument)
    }

    /// Phase one, before the load: remote manifests fetched (or their accepted copies, when they
    /// cannot be and are young enough), every signature verified when keys are trusted.
    public func openManifests(_ arguments: [String]) async throws(SyncFailure) -> OpenedManifests {
        var opened = OpenedManifests()
        let trust = options.trust
        if trust.signature != nil, arguments.count != 1 {
            throw Self.refusal("--signature", "--signature names the signature of one manifest; give one manifest with it")
        }
        for argument in arguments {
            let remote = Self.isRemoteManifest(argument)
            guard remote || !trust.keys.isEmpty else {
                opened.manifests.append(.init(argument: argument, path: argument, source: Self.absolutePath(argument), isRemote: false,
                                              object: "", signature: nil, fromCopy: false))
                continue
            }
            let source = remote ? argument : Self.absolutePath(argument)
            let accepted = try? acceptedIndex()?.acceptedManifest(source)
            var path = argument
            var fromCopy = false
            if remote {
                opened.fetchedURLs.append(argument)
                switch try await fetchDocument(argument) {
                case .success(let fetched):
                    path = fetched
                case .failure(let failure):
                    let reason = failure.reason
                    let copy = Self.acceptedCopyPath(options.cacheDirectory, source: source)
                    guard let accepted, access(copy, R_OK) == 0 else {
                        throw .cache(.manifestUnavailable("\(Redact.url(argument)): \(reason); no copy of it was accepted before"))
                    }
                    let age = Date().timeIntervalSince1970 - accepted.checkedAt
                    guard age <= trust.maxAge else {
                        throw .cache(.manifestUnavailable("\(Redact.url(argument)): \(reason); the copy accepted before was last "
                            + "current \(Units.formatDuration(age)) ago, more than --manifest-max-age \(Units.formatDuration(trust.maxAge))"))
                    }
                    context.logger.warning("\(Redact.url(argument)): \(reason); using the copy accepted \(Units.formatDuration(age)) ago")
                    path = copy
                    fromCopy = true
                }
            }
            guard let bytes = FileManager.default.contents(atPath: path).map({ [UInt8]($0) }) else {
                throw .manifest(ManifestErrors(diagnostics: [ManifestDiagnostic(path: argument, line: 0, column: 0,
                                                                                message: "cannot read manifest", kind: .unreadable)],
                                               truncated: false))
            }
            let object = Hex.encode(SHA256.hash(data: bytes))
            var signature: [UInt8]?
            if !trust.keys.isEmpty {
                signature = try await verifiedSignature(of: bytes, argument: argument, source: source, remote: remote,
                                                        unchanged: remote && (fromCopy || accepted?.object == object), opened: &opened)
            }
            opened.manifests.append(.init(argument: argument, path: path, source: source, isRemote: remote, object: object,
                                          signature: signature, fromCopy: fromCopy))
        }
        return opened
    }

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
              arguments.allSatisfy({ URLResolver.hasHTTPScheme($0) }), let index = try? acceptedIndex() else { return nil }
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

    /// The three phases for commands that only read manifests (`plan`, `export`, `verify
    /// --repair`): opened, loaded, accepted.
    public func openAndLoad(_ arguments: [String], collectsTree: Bool = false,
                            expandsHeaders: Bool = true) async throws(SyncFailure) -> (set: ManifestSet, opened: OpenedManifests) {
        let opened = try await openManifests(arguments)
        let set: ManifestSet
        do {
            var loader = ManifestLoader()
            loader.collectsTree = collectsTree
            loader.expandsHeaders = expandsHeaders
            loader.remoteSources = opened.remoteSources
            set = try loader.load(paths: opened.paths)
        } catch {
            throw .manifest(error)
        }
        record(try acceptManifests(set, opened))
        return (set, opened)
    }

    /// The signature that verifies `bytes`: for a remote manifest that did not change, the one
    /// kept with its accepted copy (no request; checked again with today's keys), else the one
    /// beside it (`NAME.minisig`, `NAME.sig`) or the one given.
    private func verifiedSignature(of bytes: [UInt8], argument: String, source: String, remote: Bool, unchanged: Bool,
                                   opened: inout OpenedManifests) async throws(SyncFailure) -> [UInt8] {
        let keys = options.trust.keys
        if unchanged, let kept = FileManager.default.contents(atPath: Self.acceptedCopyPath(options.cacheDirectory, source: source) + ".sig"),
           case .success = keys.verify(bytes, signature: [UInt8](kept)) {
            return [UInt8](kept)
        }
        let candidates = options.trust.signature.map { [$0] } ?? keys.signatureSuffixes.map { Self.beside(argument, suffix: $0) }
        var tried: [String] = []
        for candidate in candidates {
            let signature: [UInt8]
            if Self.isRemoteManifest(candidate) {
                opened.fetchedURLs.append(candidate)
                switch try await fetchDocument(candidate) {
                case .success(let path):
                    signature = FileManager.default.contents(atPath: path).map { [UInt8]($0) } ?? []
                case .failure(let failure):
                    tried.append("\(Redact.url(candidate)) (\(failure.reason))")
                    continue
                }
            } else {
                guard let data = FileManager.default.contents(atPath: candidate) else {
                    tried.append("\(candidate) (not found)")
                    continue
                }
                signature = [UInt8](data)
            }
            switch keys.verify(bytes, signature: signature) {
            case .success(let signer):
                context.logger.debug("\(Redact.url(argument)): signed by \(signer)")
                return signature
            case .failure(let problem):
                throw Self.refusal(argument, "\(problem.message); expected a signature by \(keys.expected)")
            }
        }
        throw Self.refusal(argument, "not signed: no signature at \(tried.joined(separator: ", ")); expected one by \(keys.expected)")
    }

    /// Phase two, after the load: `expires` and `serial` checked (reads only). What is accepted
    /// is recorded by `record` — after the sync's plan, so that no write lands between the index
    /// read ahead and its use.
    public func acceptManifests(_ set: ManifestSet, _ opened: OpenedManifests) throws(SyncFailure) -> AcceptedManifests {
        let now = Date().timeIntervalSince1970
        var diagnostics: [ManifestDiagnostic] = []
        var accepted = AcceptedManifests()
        // Only remote and signed manifests have a record (local ones without keys are not read twice).
        let index = opened.manifests.contains { !$0.object.isEmpty } ? try? acceptedIndex() : nil
        for (manifest, opening) in zip(set.manifests, opened.manifests) {
            if let expires = manifest.expires, expires <= now {
                diagnostics.append(ManifestDiagnostic(path: manifest.path, line: manifest.expiresPosition.line,
                                                      column: manifest.expiresPosition.column, message: "expired at \(RFC3339.format(expires)): the publisher has not signed a newer one (a stale manifest is refused)"))
                continue
            }
            guard !opening.object.isEmpty else { continue }
            let previous = try? index?.acceptedManifest(opening.source)
            if let last = previous?.serial {
                guard let serial = manifest.serial else {
                    diagnostics.append(ManifestDiagnostic(path: manifest.path, line: 0, column: 0,
                                                          message: "has no serial, but serial \(last) was accepted before (a rollback is refused)"))
                    continue
                }
                if serial < last {
                    diagnostics.append(ManifestDiagnostic(path: manifest.path, line: manifest.serialPosition.line,
                                                          column: manifest.serialPosition.column, message: "serial \(serial) is lower than \(last), accepted before (a rollback is refused)"))
                    continue
                }
            }
            guard !opening.fromCopy else { continue }
            accepted.records.append((opening, AcceptedManifest(
                source: opening.source, serial: manifest.serial ?? previous?.serial, object: opening.object,
                acceptedAt: previous?.object == opening.object ? previous?.acceptedAt ?? now : now, checkedAt: now)))
            accepted.copyKept.append(previous?.object == opening.object)
        }
        guard diagnostics.isEmpty else { throw .manifest(ManifestErrors(diagnostics: diagnostics, truncated: false)) }
        return accepted
    }

    /// Records what was accepted: the copy and its signature beside the index (unless the same
    /// copy is there), and the row. Nothing when the cache cannot be written (a reader's `plan`).
    public func record(_ accepted: AcceptedManifests) {
        guard !accepted.records.isEmpty, let index = try? acceptedIndex() else { return }
        for ((opening, row), kept) in zip(accepted.records, accepted.copyKept) {
            let copy = Self.acceptedCopyPath(options.cacheDirectory, source: opening.source)
            if !(kept && access(copy, R_OK) == 0) {
                guard (try? keepCopy(of: opening, at: copy)) != nil else { continue }
            }
            try? index.recordAccepted(row)
        }
    }

    /// The accepted copy of `source`'s manifest (its signature beside it, `.sig`).
    static func acceptedCopyPath(_ cacheDirectory: String, source: String) -> String {
        cacheDirectory + "/manifests/" + Hex.encode(SHA256.hash(data: Array(source.utf8))).prefix(32) + ".yaml"
    }

    private func keepCopy(of opening: OpenedManifests.Opened, at copy: String) throws {
        guard opening.path != copy else { return }
        try FileManager.default.createDirectory(atPath: options.cacheDirectory + "/manifests", withIntermediateDirectories: true)
        for (bytes, target) in [(FileManager.default.contents(atPath: opening.path).map { [UInt8]($0) }, copy),
                                (opening.signature, copy + ".sig")] {
            guard let bytes else { continue }
            let temporary = target + ".\(getpid()).tmp"
            try Data(bytes).write(to: URL(fileURLWithPath: temporary))
            guard rename(temporary, target) == 0 else {
                unlink(temporary)
                throw DocumentFailure(reason: "cannot rename \(temporary)")
            }
        }
    }

    /// The index, when the cache has one (opened to read; writes are tried and may fail).
    private func acceptedIndex() throws -> CacheIndex? {
        let path = CacheLayout.indexPath(options.cacheDirectory)
        guard access(path, F_OK) == 0 else { return nil }
        return try CacheIndex(path: path, create: false)
    }

    /// A small document (a manifest, a signature) through the cache like `get`, asked for with a
    /// conditional request when cached: its object file, or why not.
    private func fetchDocument(_ url: String) async throws(SyncFailure) -> Result<String, DocumentFailure> {
        if let problem = Self.urlProblem(url) { return .failure(DocumentFailure(reason: problem)) }
        if let unchanged = await unchangedDocument(url) { return .success(unchanged) }
        // A command that never creates a cache (`plan`, `verify`) reads a manifest a missing
        // cache does not hold through a cache of its own, in a temporary folder kept until exit.
        guard options.mayCreateCache || access(CacheLayout.indexPath(options.cacheDirectory), F_OK) == 0 else {
            var scratch = options
            scratch.cacheDirectory = Self.scratchCache
            scratch.mayCreateCache = true
            return try await SyncEngine(options: scratch, context: context).fetchDocument(url)
        }
        let pinned: (items: [ManifestWriter.Item], failed: [SyncReport.Entry])
        do {
            pinned = try await pin(urls: [url], source: "manifest")
        } catch .cache(let error) {
            switch error {
            case .locked, .rewriteRefused, .awsSettings: throw .cache(error)
            default: return .failure(DocumentFailure(reason: "\(error)"))
            }
        } catch {
            throw error
        }
        if let item = pinned.items.first { return .success(CacheLayout.objectPath(options.cacheDirectory, item.sha256)) }
        let row = pinned.failed.first
        return .failure(DocumentFailure(reason: [row?.reason?.rawValue, row?.error].compactMap { $0 }.joined(separator: ": ")))
    }

    /// The object of an http(s) document the cache holds, when a conditional request says it is
    /// unchanged (304): one exchange on one engine, and no write (the usual way, `get`'s one-entry
    /// sync, commits even a 304). nil when it changed, failed or is not cached: fetch it as usual.
    private func unchangedDocument(_ url: String) async -> String? {
        guard URLResolver.hasHTTPScheme(url), !options.offline, !options.refresh,
              let index = try? acceptedIndex(), let row = try? index.record(url: url), row.etag != nil || row.lastModified != nil
        else { return nil }
        let path = CacheLayout.objectPath(options.cacheDirectory, row.object)
        var info = stat()
        guard stat(path, &info) == 0, Int64(info.st_size) == row.size,
              await unchanged([UnchangedCheck(url: url, etag: row.etag, lastModified: row.lastModified, object: row.object)])
        else { return nil }
        return path
    }

    /// The process's scratch cache for manifests read by commands that never create one: made
    /// once, removed at exit.
    public static var scratchCacheDirectory: String { scratchCache }

    static let scratchCache: String = {
        var template = Array((FileManager.default.temporaryDirectory.path + "/worker-manifests-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer in mkdtemp(buffer.baseAddress!) }.map { String(cString: $0) }
        atexit { try? FileManager.default.removeItem(atPath: SyncEngine.scratchCache) }
        return made ?? FileManager.default.temporaryDirectory.path + "/worker-manifests-\(getpid())"
    }()

    /// A signature's usual place: the manifest's name with `suffix` (before a URL's query).
    static func beside(_ argument: String, suffix: String) -> String {
        guard isRemoteManifest(argument), let query = argument.firstIndex(where: { $0 == "?" || $0 == "#" }) else {
            return argument + suffix
        }
        return String(argument[..<query]) + suffix + String(argument[query...])
    }

    static func absolutePath(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }

    static func refusal(_ path: String, _ message: String) -> SyncFailure {
        .manifest(ManifestErrors(diagnostics: [ManifestDiagnostic(path: path, line: 0, column: 0, message: message)], truncated: false))
    }
}

/// Why a manifest or its signature could not be fetched (or its copy kept), in words.
struct DocumentFailure: Error {
    let reason: String
}

/// What phase two accepted, to record once the run is past its plan.
public struct AcceptedManifests: Sendable {
    var records: [(OpenedManifests.Opened, AcceptedManifest)] = []
    /// The same bytes were accepted before (their copy is kept already).
    var copyKept: [Bool] = []
}
