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
        URLKinds.has(.manifest, argument)
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

    /// This engine, keeping the rows of the URLs fetched for the manifests (never orphans).
    func keeping(_ opened: OpenedManifests) -> SyncEngine {
        guard !opened.fetchedURLs.isEmpty else { return self }
        var options = options
        options.keptURLs.formUnion(opened.fetchedURLs)
        return SyncEngine(options: options, context: context)
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
        return (try await resolvingExpansions(set), opened)
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

    /// The index, when the cache has one (opened to read; writes are tried and may fail).
    func acceptedIndex() throws -> CacheIndex? {
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
