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
    /// `documents` holds what this run already fetched (a confirmation's 200s).
    public func openManifests(_ arguments: [String]) async throws(SyncFailure) -> OpenedManifests {
        try await openManifests(arguments, documents: [:])
    }

    func openManifests(
        _ arguments: [String], documents: [String: Result<String, DocumentFailure>]
    ) async throws(SyncFailure) -> OpenedManifests {
        var opened = OpenedManifests()
        let trust = options.trust
        if trust.signature != nil, arguments.count != 1 {
            throw Self.refusal("--signature", "--signature names the signature of one manifest; give one manifest with it")
        }
        for argument in arguments {
            let remote = Self.isRemoteManifest(argument)
            guard remote || !trust.keys.isEmpty else {
                opened.manifests.append(
                    .init(
                        argument: argument, path: argument, source: Self.absolutePath(argument), isRemote: false,
                        object: "", signature: nil, fromCopy: false))
                continue
            }
            opened.manifests.append(try await open(argument, remote: remote, documents: documents, opened: &opened))
        }
        return opened
    }

    /// One remote or signed manifest: its bytes, where they are, and the signature that verifies
    /// them. A signature that fails right after the manifest changed is asked again once, with
    /// the manifest (a publisher replaces two files, one after the other).
    private func open(
        _ argument: String, remote: Bool, documents: [String: Result<String, DocumentFailure>],
        opened: inout OpenedManifests
    ) async throws(SyncFailure) -> OpenedManifests.Opened {
        let source = remote ? argument : Self.absolutePath(argument)
        let accepted = try? acceptedIndex()?.acceptedManifest(source)
        var documents = documents
        var askedAgain = false
        while true {
            var path = argument
            var fromCopy = false
            var bytes: [UInt8]?
            if remote {
                if !opened.fetchedURLs.contains(argument) { opened.fetchedURLs.append(argument) }
                switch try await fetchDocument(argument, documents: documents) {
                case .success(let fetched):
                    path = fetched
                    bytes = FileManager.default.contents(atPath: path).map { [UInt8]($0) }
                case .failure(let failure):
                    (path, bytes) = try keptCopy(of: argument, source: source, accepted: accepted, reason: failure.reason)
                    fromCopy = true
                }
            } else {
                bytes = FileManager.default.contents(atPath: path).map { [UInt8]($0) }
            }
            guard let bytes else {
                throw .manifest(
                    ManifestErrors(
                        diagnostics: [
                            ManifestDiagnostic(
                                path: argument, line: 0, column: 0,
                                message: "cannot read manifest", kind: .unreadable)
                        ],
                        truncated: false))
            }
            let object = Hex.encode(SHA256.hash(data: bytes))
            guard !options.trust.keys.isEmpty else {
                return .init(
                    argument: argument, path: path, source: source, isRemote: remote, object: object, signature: nil,
                    fromCopy: fromCopy, readAs: Self.fileName(of: argument))
            }
            let changed = remote && !fromCopy && accepted?.object != object
            switch try await verifiedSignature(
                of: bytes, argument: argument, source: source, unchanged: remote && !changed,
                documents: documents, opened: &opened)
            {
            case .success(let (signature, check)):
                return .init(
                    argument: argument, path: path, source: source, isRemote: remote, object: object, signature: signature,
                    fromCopy: fromCopy, readAs: Self.fileName(of: argument), signer: check.signer, signedFile: check.file)
            case .failure(let refusal):
                guard changed, !askedAgain else { throw refusal }
                askedAgain = true
                documents = [:]
                try? await Task.sleep(nanoseconds: 500_000_000)
            }
        }
    }

    /// The copy accepted before, when the manifest cannot be fetched and the copy is young
    /// enough: read without following a link, and only when its bytes are still the SHA-256
    /// recorded when it was accepted.
    private func keptCopy(
        of argument: String, source: String, accepted: AcceptedManifest?,
        reason: String
    ) throws(SyncFailure) -> (path: String, bytes: [UInt8]) {
        guard let accepted, let (copy, bytes) = Self.readAcceptedCopy(options.cacheDirectory, source: source, object: accepted.object)
        else {
            throw .manifestUnavailable("\(Redact.url(argument)): \(reason); no copy of it was accepted before")
        }
        // An unsigned copy is only as good as the cache it came in, which this run does not vouch for.
        guard !options.refreshUnpinned || !options.trust.keys.isEmpty else {
            throw .manifestUnavailable(
                "\(Redact.url(argument)): \(reason); the copy accepted before is unsigned, "
                    + "and not used under --refresh-unpinned")
        }
        let age = Date().timeIntervalSince1970 - accepted.checkedAt
        guard age <= options.trust.maxAge else {
            throw .manifestUnavailable(
                "\(Redact.url(argument)): \(reason); the copy accepted before was last "
                    + "current \(Units.formatAge(age)) ago, more than --manifest-max-age \(Units.formatDuration(options.trust.maxAge))")
        }
        context.logger.warning("\(Redact.url(argument)): \(reason); using the copy accepted \(Units.formatAge(age)) ago")
        return (copy, bytes)
    }

    /// The name a manifest is read as: its URL's or path's last segment (no query or fragment).
    static func fileName(of argument: String) -> String {
        let path = isRemoteManifest(argument) ? String(argument.prefix { $0 != "?" && $0 != "#" }) : argument
        return path.split(separator: "/").last.map(String.init) ?? path
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
    public func openAndLoad(
        _ arguments: [String], collectsTree: Bool = false,
        expandsHeaders: Bool = true
    ) async throws(SyncFailure) -> (set: ManifestSet, opened: OpenedManifests) {
        let opened = try await openManifests(arguments)
        let set: ManifestSet
        do {
            var loader = ManifestLoader()
            loader.collectsTree = collectsTree
            loader.expandsHeaders = expandsHeaders
            loader.remoteSources = opened.remoteSources
            loader.remoteEnvironment = options.trust.environment
            set = try loader.load(paths: opened.paths)
        } catch {
            throw .manifest(error)
        }
        let accepted = try acceptManifests(set, opened)
        do throws(CacheError) { try record(accepted) } catch { throw .cache(error) }
        return (try await resolvingExpansions(set), opened)
    }

    /// The largest signature document read (a minisign or SSH signature is a few hundred bytes).
    static let maxSignatureBytes: Int64 = 64 << 10

    /// The signature that verifies `bytes`: for a remote manifest that did not change, the one
    /// kept with its accepted copy (no request; checked again with today's keys), else the one
    /// beside it (`NAME.minisig`, `NAME.sig`) or the one given. A fetched signature that fails is
    /// not kept. A refusal is returned (the caller may ask again), other failures thrown.
    private func verifiedSignature(
        of bytes: [UInt8], argument: String, source: String, unchanged: Bool,
        documents: [String: Result<String, DocumentFailure>],
        opened: inout OpenedManifests
    ) async throws(SyncFailure) -> Result<([UInt8], SignatureCheck), SyncFailure> {
        let keys = options.trust.keys
        if unchanged,
            let copy = Self.readAcceptedCopy(options.cacheDirectory, source: source, object: Hex.encode(SHA256.hash(data: bytes))),
            let kept = KeptFile.read(copy.path + ".sig"),
            case .success(let check) = keys.verify(bytes, signature: kept)
        {
            return .success((kept, check))
        }
        let candidates = options.trust.signature.map { [$0] } ?? keys.signatureSuffixes.map { Self.beside(argument, suffix: $0) }
        var tried: [String] = []
        for candidate in candidates {
            let signature: [UInt8]
            if Self.isRemoteManifest(candidate) {
                if !opened.fetchedURLs.contains(candidate) { opened.fetchedURLs.append(candidate) }
                switch try await fetchDocument(candidate, documents: documents, maxSize: Self.maxSignatureBytes) {
                case .success(let path):
                    signature = FileManager.default.contents(atPath: path).map { [UInt8]($0) } ?? []
                case .failure(let failure):
                    tried.append("\(Redact.url(candidate)) (\(failure.reason))")
                    continue
                }
            } else {
                guard let data = KeptFile.read(candidate, upTo: Int(Self.maxSignatureBytes)) else {
                    tried.append("\(candidate) (not found, or larger than 64 KiB)")
                    continue
                }
                signature = data
            }
            switch keys.verify(bytes, signature: signature) {
            case .success(let check):
                context.logger.debug("\(Redact.url(argument)): signed by \(check.signer)")
                return .success((signature, check))
            case .failure(let problem):
                if Self.isRemoteManifest(candidate) { await forget(candidate) }
                return .failure(Self.refusal(argument, "\(problem.message); expected a signature by \(keys.expected)"))
            }
        }
        return .failure(
            Self.refusal(argument, "not signed: no signature at \(tried.joined(separator: ", ")); expected one by \(keys.expected)"))
    }

    /// Drops a fetched document the run refused (its row, and its object when nothing else names it).
    private func forget(_ url: String) async {
        _ = try? await CacheMaintenance(cacheDirectory: options.cacheDirectory, waitLock: options.waitLock, context: context)
            .remove(urls: [url])
    }

    /// The index, when the cache has one (opened to read; writes are tried and may fail).
    func acceptedIndex() throws -> CacheIndex? {
        let path = CacheLayout.indexPath(options.cacheDirectory)
        guard access(path, F_OK) == 0 else { return nil }
        return try CacheIndex(path: path, create: false)
    }

    /// A small document (a manifest, a signature) through the cache like `get`, asked for with a
    /// conditional request when cached (its 200 is the new copy): its object file, or why not.
    /// `documents` holds what this run already fetched.
    private func fetchDocument(
        _ url: String, documents: [String: Result<String, DocumentFailure>] = [:], maxSize: Int64? = nil
    )
        async throws(SyncFailure) -> Result<String, DocumentFailure>
    {
        if let fetched = documents[url] { return fetched }
        if let maxSize, maxSize < options.fetch.maxSize {
            var limited = options
            limited.fetch.maxSize = maxSize
            return try await SyncEngine(options: limited, context: context).fetchDocument(url)
        }
        if let problem = Self.urlProblem(url) { return .failure(DocumentFailure(reason: problem)) }
        // A command that never writes the cache (`plan`, `export`, `verify`) asks without a write:
        // a 304 confirms what the cache holds.
        if !options.mayCreateCache, let unchanged = await unchangedDocument(url) { return .success(unchanged) }
        // A command that never creates a cache reads a manifest a missing cache does not hold
        // through a cache of its own, in a temporary folder kept until exit.
        guard options.mayCreateCache || access(CacheLayout.indexPath(options.cacheDirectory), F_OK) == 0 else {
            var scratch = options
            scratch.cacheDirectory = Self.scratchCache
            scratch.mayCreateCache = true
            return try await SyncEngine(options: scratch, context: context).fetchDocument(url)
        }
        return try await fetchDocuments([url])[url] ?? .failure(DocumentFailure(reason: "not fetched"))
    }

    /// Documents fetched together through the cache (one run, conditional requests for those it
    /// holds): each one's object file, or why not.
    func fetchDocuments(_ urls: [String]) async throws(SyncFailure) -> [String: Result<String, DocumentFailure>] {
        let pinned: (items: [ManifestWriter.Item], failed: [SyncReport.Entry])
        do {
            pinned = try await pin(urls: urls, source: "manifest")
        } catch .cache(let error) {
            switch error {
            // The cache's own disk failing (an fsync's EIO, the index) is not the manifest's
            // origin failing: nothing after it is trusted, a copy accepted before included.
            case .locked, .system, .index, .unusable: throw .cache(error)
            default: return Dictionary(urls.map { ($0, .failure(DocumentFailure(reason: "\(error)"))) }, uniquingKeysWith: { a, _ in a })
            }
        } catch {
            throw error
        }
        var documents: [String: Result<String, DocumentFailure>] = [:]
        for item in pinned.items { documents[item.url] = .success(CacheLayout.objectPath(options.cacheDirectory, item.sha256)) }
        // The failed rows come in the order of their URLs.
        var failed = pinned.failed.makeIterator()
        for url in urls where documents[url] == nil {
            let row = failed.next()
            documents[url] = .failure(
                DocumentFailure(reason: [row?.reason?.rawValue, row?.error].compactMap { $0 }.joined(separator: ": ")))
        }
        return documents
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
struct DocumentFailure: Error, Sendable {
    let reason: String
}
