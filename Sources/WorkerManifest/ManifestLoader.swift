import FoundationEssentials
import Glibc
import WorkerSupport

/// Reads and validates manifests completely (a streaming pass each) before anything else happens:
/// URL resolution, `${VAR}` expansion, and the same URL listed with two hashes.
public struct ManifestLoader {
    public var environment: [String: String]
    var maxDiagnostics = 50
    /// Expand `${VAR}` in header values (off for `worker fingerprint`, which never needs them).
    public var expandsHeaders = true
    /// Collect and check every entry's tree path (`--tree`, `export --layout tree`): a URL
    /// without a usable path, two entries at one path, a file where another needs a folder.
    /// (An explicit `path:` is checked whatever this says, and against the other explicit ones.)
    public var collectsTree = false
    /// Manifests read from a copy of a remote one: the copy's path → the URL it came from. Errors
    /// and the report name the URL; relative entries resolve against it (unless `base_url` is set).
    public var remoteSources: [String: String] = [:]
    /// The only variables a remote manifest's `${VAR}` may read (`--manifest-env`): whoever
    /// publishes or serves it must not read the runner's environment.
    public var remoteEnvironment: Set<String> = []

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.environment = environment
    }

    /// Loads every manifest; throws `ManifestErrors` listing each problem as `path:line:column`.
    public func load(paths: [String]) throws(ManifestErrors) -> ManifestSet {
        var diagnostics: [ManifestDiagnostic] = []
        var manifests: [Manifest] = []
        var collector = EntryCollector(collectsTree: collectsTree)
        // About a hundred bytes of YAML an entry: size the URL map and the entries once instead
        // of growing them (each growth copies every entry so far).
        let bytes = Self.totalBytes(paths)
        let expected = min(bytes / 100, 50_000_000)
        collector.positions.reserve(expected)
        // A URL and its digest take about as many bytes as the entry's YAML (reserved pages that
        // are never written cost nothing).
        collector.entries.reserve(expected, textBytes: min(bytes, 1 << 30))

        for path in paths {
            guard diagnostics.count < maxDiagnostics else { break }
            let index = manifests.count
            var reader = ManifestReader(path: path)
            reader.maxDiagnostics = maxDiagnostics - diagnostics.count
            var fileDiagnostics: [ManifestDiagnostic] = []
            var entryDiagnostics: [ManifestDiagnostic] = []
            var resolver = URLResolver(manifestPath: path)
            var baseProblem: String?
            /// Relative entries read before `base_url` (if any) was: resolved once the header is known.
            var deferred: [RawEntry] = []
            var listed = 0
            let shown = remoteSources[path] ?? path
            let report = { (line: Int, column: Int, message: String) in
                ManifestDiagnostic(path: shown, line: line, column: column, message: message)
            }
            let header = reader.read(diagnostics: &fileDiagnostics) { item, headerSoFar in
                listed += 1
                if resolver.base == nil, baseProblem == nil, let base = headerSoFar.baseURL {
                    baseProblem = resolver.setBase(base)
                }
                // A relative entry waits for the header's base_url (most entries are absolute URLs
                // of a kind, told from their first bytes).
                if resolver.base == nil, URLKinds.kind(of: item.url) == nil, URLKinds.scheme(of: item.url) == nil {
                    deferred.append(item)
                    return
                }
                collector.add(
                    item, resolver.resolve(item.url), manifest: index, manifests: manifests, path: path,
                    into: &entryDiagnostics)
            }
            collector.flush(manifests: manifests, path: path, into: &entryDiagnostics)
            if fileDiagnostics.contains(where: { $0.kind != .content }) {
                diagnostics += fileDiagnostics
                continue
            }
            if resolver.base == nil, baseProblem == nil, let base = header.baseURL {
                baseProblem = resolver.setBase(base)
            }
            // A remote manifest without `base_url` resolves its relative entries against its own URL.
            if resolver.base == nil, baseProblem == nil, let source = remoteSources[path] {
                baseProblem = resolver.setBase(Self.folder(of: source))
            }
            if let baseProblem {
                fileDiagnostics.append(report(header.baseURLPosition.line, header.baseURLPosition.column, baseProblem))
            } else {
                for item in deferred {
                    collector.add(
                        item, resolver.resolve(item.url), manifest: index, manifests: manifests, path: path,
                        into: &fileDiagnostics)
                }
                collector.flush(manifests: manifests, path: path, into: &fileDiagnostics)
            }
            let headers =
                expandsHeaders
                ? expand(header.headers, path: path, into: &fileDiagnostics)
                : header.headers.map { RequestHeader(name: $0.name, value: $0.value) }
            diagnostics += (fileDiagnostics + entryDiagnostics).sorted { ($0.line, $0.column) < ($1.line, $1.column) }
            var manifest = Manifest(
                path: shown,
                name: header.name ?? Self.defaultName(shown),
                baseURL: resolver.base,
                headers: headers,
                localRoot: resolver.folder,
                entryCount: listed,
                mirrors: header.mirrors
            )
            manifest.serial = header.serial
            manifest.expires = header.expires
            manifest.serialPosition = header.serialPosition
            if header.name != nil { manifest.namePosition = header.namePosition }
            manifest.expiresPosition = header.expiresPosition
            manifests.append(manifest)
        }
        // Without a tree, the entries that name a `path` are still checked against each other.
        let tree = collectsTree || !collector.tree.isEmpty ? TreeConflicts.sorted(collector.tree) : []
        if !tree.isEmpty, diagnostics.allSatisfy({ $0.kind == .content }) {
            diagnostics += TreeConflicts.find(tree, manifests: manifests)
        }
        if !diagnostics.isEmpty {
            if !remoteSources.isEmpty {
                diagnostics = diagnostics.map { diagnostic in
                    remoteSources[diagnostic.path].map {
                        ManifestDiagnostic(
                            path: $0, line: diagnostic.line, column: diagnostic.column, message: diagnostic.message,
                            kind: diagnostic.kind)
                    } ?? diagnostic
                }
            }
            throw ManifestErrors(
                diagnostics: Array(diagnostics.prefix(maxDiagnostics)),
                truncated: diagnostics.count >= maxDiagnostics)
        }
        return ManifestSet(manifests: manifests, entries: collector.entries, tree: collectsTree ? tree : [])
    }

    /// The manifests' sizes together (unreadable ones count 0). By stat, not FileManager's
    /// attributes: those look up the owner's user and group names (/etc/passwd, nscd).
    public static func totalBytes(_ paths: [String]) -> Int {
        paths.reduce(0) { total, path in
            var info = stat()
            return total + (stat(path, &info) == 0 ? Int(info.st_size) : 0)
        }
    }

    /// A remote manifest's folder: its URL up to the last `/` of the path (no query or fragment).
    static func folder(of url: String) -> String {
        let path = url.prefix { $0 != "?" && $0 != "#" }
        guard let slash = path.lastIndex(of: "/") else { return String(path) + "/" }
        return String(path[...slash])
    }

    public static func defaultName(_ path: String) -> String {
        let file = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
        return file.isEmpty ? "manifest" : file
    }

    static func abbreviate(_ hash: ContentHash) -> String {
        "\(hash.algorithm.rawValue):\(hash.hex.prefix(12))…"
    }

    /// Expands `${VAR}` in header values; a missing variable is reported by name, never by value.
    private func expand(
        _ headers: [(name: String, value: String, line: Int, column: Int)],
        path: String,
        into diagnostics: inout [ManifestDiagnostic]
    ) -> [RequestHeader] {
        func report(_ line: Int, _ column: Int, _ message: String) {
            diagnostics.append(ManifestDiagnostic(path: path, line: line, column: column, message: message))
        }
        var out: [RequestHeader] = []
        for header in headers {
            let value: String
            let allowed = remoteSources[path] == nil ? nil : remoteEnvironment
            switch VariableExpansion.expand(header.value, environment: environment, allowed: allowed) {
            case .success(let expanded):
                value = expanded
            case .failure(let problem):
                report(header.line, header.column, "header '\(header.name)': \(problem.message)")
                continue
            }
            // Bytes, not Characters: "\r\n" is one Character, equal to neither "\r" nor "\n".
            if value.utf8.contains(where: HTTPToken.isForbiddenInValue) {
                report(
                    header.line, header.column,
                    "header '\(header.name)': the value contains a control character (CR, LF, NUL or another)")
                continue
            }
            out.append(RequestHeader(name: header.name, value: value))
        }
        return out
    }
}

/// Merges entries from every manifest: one per distinct URL, conflicting hashes reported with
/// both places. Each entry is recorded when the next one arrives (or at `flush`): its slot in
/// the URL map, asked for when it came, has been loaded meanwhile.
private struct EntryCollector {
    let collectsTree: Bool
    var entries = ManifestEntries()
    var tree: [TreeEntry] = []

    init(collectsTree: Bool) {
        self.collectsTree = collectsTree
    }
    var positions = URLPositions()
    /// An entry read, with its resolved URL and that URL's digest, not yet recorded. (A struct:
    /// as a tuple it was copied and destroyed through the runtime's generic tuple functions.)
    private struct Pending {
        var item: RawEntry
        var url: String
        var digest: UInt64
        var manifest: Int
    }
    private var pending: Pending?

    /// Adds `item`, whose URL resolved to `resolved`. (The resolver itself is not passed: that
    /// copied it, with its strings and URL, for every entry.)
    mutating func add(
        _ item: RawEntry, _ resolved: Result<String, URLResolver.Problem>, manifest index: Int,
        manifests: [Manifest], path: String, into diagnostics: inout [ManifestDiagnostic]
    ) {
        let url: String
        switch resolved {
        case .success(let resolved) where !item.mirrors.isEmpty && LocalFile.isLocal(resolved):
            diagnostics.append(
                ManifestDiagnostic(
                    path: path, line: item.line, column: item.column,
                    message: "'mirrors' apply to http and https entries; this one is a local file"))
            return
        case .success(let resolved): url = resolved
        case .failure(let problem):
            diagnostics.append(ManifestDiagnostic(path: path, line: item.line, column: item.column, message: problem.message))
            return
        }
        // A URL that names its own hash (an OCI blob's digest) pins the entry; a `hash:` agrees.
        let implied = URLKinds.impliedHash(of: url)
        if let implied, let given = item.hash, given != implied {
            diagnostics.append(
                ManifestDiagnostic(
                    path: path, line: item.line, column: item.column,
                    message: "the hash is not the digest the URL names (\(ManifestLoader.abbreviate(implied)))"))
            return
        }
        let previous = pending
        pending = Pending(item: item, url: url, digest: positions.digest(url), manifest: index)
        if let implied, item.hash == nil { pending?.item.hash = implied }
        if let previous { record(previous, manifests: manifests, path: path, into: &diagnostics) }
    }

    /// Records the entry still waiting; call before the entries are read and at the end of each
    /// manifest (a waiting entry is always of the manifest being read).
    mutating func flush(manifests: [Manifest], path: String, into diagnostics: inout [ManifestDiagnostic]) {
        guard let waiting = pending else { return }
        pending = nil
        record(waiting, manifests: manifests, path: path, into: &diagnostics)
    }

    /// The entry's tree path: its own, or its URL's as its kind says (an `s3://` URL's key,
    /// literal: below an `s3://` base_url the key as written, else the key after the bucket).
    private mutating func addToTree(
        _ item: RawEntry, resolved: String, entry: Int, manifest: Int, path: String,
        into diagnostics: inout [ManifestDiagnostic]
    ) {
        if let explicit = item.path {
            tree.append(TreeEntry(path: explicit, entry: entry, manifest: manifest, line: item.pathLine, column: item.pathColumn))
            return
        }
        switch URLKinds.treePath(written: item.url, resolved: resolved) {
        case .success(let derived):
            tree.append(TreeEntry(path: derived, entry: entry, manifest: manifest, line: item.line, column: item.column))
        case .failure(let problem):
            diagnostics.append(ManifestDiagnostic(path: path, line: item.line, column: item.column, message: problem.message))
        }
    }

    private mutating func record(
        _ waiting: Pending, manifests: [Manifest], path: String,
        into diagnostics: inout [ManifestDiagnostic]
    ) {
        let (item, url, digest, index) = (waiting.item, waiting.url, waiting.digest, waiting.manifest)
        // The stored URL is read (a string made) only when the digests match: a URL listed again.
        guard let existing = positions.insertIfAbsent(url, digest: digest, at: entries.count, urlAt: { entries.url(at: $0) }) else {
            if collectsTree || item.path != nil {
                addToTree(item, resolved: url, entry: entries.count, manifest: index, path: path, into: &diagnostics)
            }
            entries.append(
                url: url, hash: item.hash, manifest: index, line: item.line, column: item.column,
                mirrors: item.mirrors)
            return
        }
        if collectsTree || item.path != nil {
            addToTree(item, resolved: url, entry: existing, manifest: index, path: path, into: &diagnostics)
        }
        let first = entries[existing]
        if let a = first.hash, let b = item.hash, a != b {
            let place = first.manifest == index ? "line \(first.line)" : "\(manifests[first.manifest].path):\(first.line)"
            diagnostics.append(
                ManifestDiagnostic(
                    path: path, line: item.line, column: item.column,
                    message: "URL \(Redact.short(Redact.url(url), limit: 80)) is listed with two hashes: "
                        + "\(ManifestLoader.abbreviate(b)) here, \(ManifestLoader.abbreviate(a)) at \(place)"))
        } else if first.hash == nil, let hash = item.hash {
            entries.setHash(hash, mirrors: item.mirrors, at: existing)
        } else if !item.mirrors.isEmpty {
            // The same URL listed again with mirrors: they are added after the first listing's.
            entries.addMirrors(item.mirrors, at: existing)
        }
    }
}
