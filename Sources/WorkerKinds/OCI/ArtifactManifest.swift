import FoundationEssentials
import Glibc
import WorkerFetch
import WorkerManifest
import WorkerStore
import WorkerSupport

/// One layer of an artifact: its digest (SHA-256 hex), its size, and its title
/// (`org.opencontainers.image.title`, which ORAS writes: the file's name).
struct ArtifactLayer: Sendable, Equatable {
    let digest: String
    let size: Int64?
    let title: String?
}

/// What a tag names, read from the registry as its clients read it: the manifest, asked for in
/// every media type worker reads (OCI image manifest and index, Docker's v2 schema 2 manifest and
/// manifest list); an index's manifests read in turn, their layers together.
extension RegistryAccess {
    static let manifestTypes = [
        "application/vnd.oci.image.manifest.v1+json", "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json", "application/vnd.docker.distribution.manifest.list.v2+json",
    ]

    /// The parts of each of `urls` (`OCIKind.expands`): a tag's titled layers as entries
    /// `oci://…:TAG#TITLE` pinned by their digests, at their titles; a `:TAG#TITLE` the one layer
    /// of that title, at the entry's own path. Layers without a title (an image's) are not files
    /// of the artifact. A tag is read where `--rewrite` sends it, then from each of its `mirrors`
    /// (by URL) in turn while it cannot be. A failure says what the registry said, after the URL.
    /// `access`: the run's, with what the registries asked for (the downloads use it).
    public func parts(
        of urls: [String], mirrors: [String: [String]], store: ContentStore, settings: FetchSettings
    ) async
        -> (results: [String: Result<[ManifestSet.Part], ManifestSet.PartsProblem>], access: any KindAccess)
    {
        var asked: [String: [OCIReference]] = [:]
        for url in urls {
            guard let tagURL = OCIReference(url)?.tagURL, asked[tagURL] == nil else { continue }
            asked[tagURL] = ([url] + (mirrors[url] ?? [])).compactMap { OCIReference(settings.locator.rewrite.apply($0)) }
                .filter { $0.tag != nil }
        }
        let (layers, access) = await self.layers(of: asked, store: store, settings: settings)
        var results: [String: Result<[ManifestSet.Part], ManifestSet.PartsProblem>] = [:]
        for url in urls {
            guard let reference = OCIReference(url), let tagURL = reference.tagURL else {
                results[url] = .failure(ManifestSet.PartsProblem("\(url): not an artifact's tag"))
                continue
            }
            switch layers[tagURL] {
            case .success(let read)?:
                let parts = read.compactMap { layer -> ManifestSet.Part? in
                    guard let title = layer.title, reference.title == nil || title == reference.title, TreePath.problem(title) == nil,
                        case .success(let hash) = ContentHash.parse("sha256:" + layer.digest)
                    else { return nil }
                    return ManifestSet.Part(url: tagURL + "#" + title, hash: hash, name: reference.title == nil ? title : "")
                }
                results[url] =
                    parts.isEmpty
                    ? .failure(
                        ManifestSet.PartsProblem(
                            "\(tagURL): "
                                + (reference.title.map { "no layer is titled '\($0)'" }
                                    ?? "no layer has a title (org.opencontainers.image.title) to be a file")))
                    : .success(parts)
            case .failure(let problem)?:
                results[url] = .failure(ManifestSet.PartsProblem("\(tagURL): \(problem.description)", refused: problem.refused))
            case nil: results[url] = .failure(ManifestSet.PartsProblem("\(tagURL): not read"))
            }
        }
        return (results, access)
    }

    /// The layers of each tag (by its `tagURL`), read from the first of its references (where
    /// it is asked: after `--rewrite`, then its mirrors) that answers; a failure names what each
    /// said. Registries are authorized as for downloads, each when it is first needed; the
    /// access with what they asked for is returned too.
    func layers(
        of tags: [String: [OCIReference]], store: ContentStore, settings: FetchSettings,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) async
        -> (results: [String: Result<[ArtifactLayer], RegistryProblem>], access: RegistryAccess)
    {
        guard let engine = try? SingleEngine(settings: settings) else {
            return (tags.mapValues { _ in .failure(RegistryProblem("no network transport")) }, self)
        }
        defer { Task { await engine.close() } }
        var access = self
        var results: [String: Result<[ArtifactLayer], RegistryProblem>] = [:]
        for (key, references) in tags.sorted(by: { $0.key < $1.key }) {
            var failures: [RegistryProblem] = []
            for reference in references {
                let problems: [RegistryProblem]
                (access, problems) = await access.resolving([reference], store: store, settings: settings, environment: environment)
                switch await Self.layers(of: reference, access: access, engine: engine, store: store, settings: settings) {
                case .success(let layers):
                    results[key] = .success(layers)
                case .failure(let failure):
                    let said = problems.first { $0.description.hasPrefix("registry \(reference.registry.lowercased())") }
                    failures.append(
                        RegistryProblem(
                            failure.description + (said.map { " (\($0.description))" } ?? ""),
                            refused: failure.refused || said?.refused == true))
                }
                if results[key] != nil { break }
            }
            if results[key] == nil, let first = failures.first {
                let mirrors = zip(references.dropFirst(), failures.dropFirst()).map { "; mirror oci://\($0.registry): \($1.description)" }
                results[key] = .failure(
                    RegistryProblem(
                        first.description + mirrors.joined(),
                        refused: failures.allSatisfy(\.refused)))
            }
        }
        return (results, access)
    }

    /// The layers of one tag as `reference` names it: its manifest (by its digest when pinned,
    /// which its bytes must have), an index's manifests in turn.
    private static func layers(
        of reference: OCIReference, access: RegistryAccess, engine: SingleEngine, store: ContentStore,
        settings: FetchSettings
    ) async -> Result<[ArtifactLayer], RegistryProblem> {
        guard let tag = reference.tag else { return .failure(RegistryProblem("not an artifact's tag")) }
        var layers: [ArtifactLayer] = []
        var queue = [reference.digest.map { "sha256:" + $0 } ?? tag]
        var seen: Set<String> = []
        while let name = queue.first {
            queue.removeFirst()
            guard seen.insert(name).inserted, seen.count <= 64 else { continue }
            let url = settings.locator.rewrite.apply(access.apiBase(of: reference) + "/manifests/" + name)
            guard RegistryAccess.mayRequest(url, of: reference, rewrite: settings.locator.rewrite) else {
                return .failure(RegistryAccess.strictRefusal(url))
            }
            switch await document(
                url, expected: name.hasPrefix("sha256:") ? String(name.dropFirst(7)) : nil,
                grant: access.grant(for: reference, at: url), engine: engine, store: store, settings: settings)
            {
            case .success(let document):
                layers += (document.layers ?? []).compactMap { layer in
                    guard layer.digest.hasPrefix("sha256:") else { return nil }
                    return ArtifactLayer(
                        digest: String(layer.digest.dropFirst(7)), size: layer.size,
                        title: layer.annotations?["org.opencontainers.image.title"])
                }
                queue += (document.manifests ?? []).map(\.digest)
            case .failure(let problem):
                return .failure(problem)
            }
        }
        return layers.isEmpty ? .failure(RegistryProblem("its manifest lists no layers")) : .success(layers)
    }

    /// `grant`: the authorization it is sent with, if any.
    private static func document(
        _ url: String, expected: String?, grant: Grant?, engine: SingleEngine, store: ContentStore,
        settings: FetchSettings
    ) async -> Result<ManifestDocument, RegistryProblem> {
        var headers = ["Accept: " + manifestTypes.joined(separator: ", ")]
        if let grant { headers.append("Authorization: " + grant.value) }
        let request = TransferRequest(url: url, headers: headers, deadline: 0)
        let reply = await engine.exchange(request) { deadline in
            ResponseHandler(
                store: store, expected: nil, maxSize: 4 << 20, conditional: false, deadline: deadline,
                entryTimeout: settings.entryTimeout, url: url, resume: nil, resumeThreshold: .max)
        }
        switch reply.result {
        case .success(.body(let file, _, _)):
            defer { unlink(file.path) }
            if let expected, file.sha256 != expected {
                return .failure(
                    RegistryProblem(
                        "the manifest asked by its digest sha256:\(expected.prefix(12))… has another (sha256:\(file.sha256.prefix(12))…)"))
            }
            guard let data = FileManager.default.contents(atPath: file.path),
                let document = try? JSONDecoder().decode(ManifestDocument.self, from: data)
            else { return .failure(RegistryProblem("its manifest is not a manifest worker reads")) }
            return .success(document)
        case .success(.status(let status, _)), .success(.statusAndHeader(let status, _)):
            if status == 401 || status == 403 {
                if let user = grant?.user {
                    return .failure(RegistryProblem("the registry refused the credentials for \(user) (HTTP \(status))", refused: true))
                }
                return .failure(
                    RegistryProblem(
                        "the registry answered HTTP \(status) "
                            + (grant == nil ? "(sent without credentials: none for this registry)" : "(sent with an anonymous token)")))
            }
            return .failure(RegistryProblem("the registry answered HTTP \(status)" + (status == 404 ? " (no such tag)" : "")))
        case .success(.redirect(let status, _)):
            return .failure(RegistryProblem("the registry answered HTTP \(status) (a redirect for a manifest)"))
        case .success(.notModified):
            return .failure(RegistryProblem("the registry answered 304"))
        case .failure(let failure):
            return .failure(RegistryProblem(failure.message))
        }
    }

    /// An image manifest (`layers`) or an index (`manifests`), as far as worker reads them.
    private struct ManifestDocument: Decodable {
        struct Descriptor: Decodable {
            let digest: String
            let size: Int64?
            let annotations: [String: String]?
        }

        let layers: [Descriptor]?
        let manifests: [Descriptor]?
    }
}
