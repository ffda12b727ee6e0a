import FoundationEssentials
import Glibc
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
    /// of the artifact. A failure says what the registry said, after the URL.
    static func parts(of urls: [String], store: ContentStore, settings: FetchSettings) async
        -> [String: Result<[ManifestSet.Part], ManifestSet.PartsProblem>] {
        let references = urls.map { OCIReference($0) }
        let layers = await layers(of: references.compactMap { $0 }.filter { $0.tag != nil }, store: store, settings: settings)
        var results: [String: Result<[ManifestSet.Part], ManifestSet.PartsProblem>] = [:]
        for (url, reference) in zip(urls, references) {
            guard let reference, let tagURL = reference.tagURL else {
                results[url] = .failure(ManifestSet.PartsProblem("\(url): not an artifact's tag"))
                continue
            }
            switch layers[tagURL] {
            case .success(let read)?:
                let parts = read.compactMap { layer -> ManifestSet.Part? in
                    guard let title = layer.title, reference.title == nil || title == reference.title, TreePath.problem(title) == nil,
                          case .success(let hash) = ContentHash.parse("sha256:" + layer.digest) else { return nil }
                    return ManifestSet.Part(url: tagURL + "#" + title, hash: hash, name: reference.title == nil ? title : "")
                }
                results[url] = parts.isEmpty
                    ? .failure(ManifestSet.PartsProblem("\(tagURL): " + (reference.title.map { "no layer is titled '\($0)'" }
                        ?? "no layer has a title (org.opencontainers.image.title) to be a file")))
                    : .success(parts)
            case .failure(let problem)?: results[url] = .failure(ManifestSet.PartsProblem("\(tagURL): \(problem.description)"))
            case nil: results[url] = .failure(ManifestSet.PartsProblem("\(tagURL): not read"))
            }
        }
        return results
    }

    /// The layers of each of `references` (tags), by its `tagURL`; a failure names what the
    /// registry said. Registries are authorized as for downloads.
    static func layers(of references: [OCIReference], store: ContentStore, settings: FetchSettings,
                               environment: [String: String] = ProcessInfo.processInfo.environment) async
        -> [String: Result<[ArtifactLayer], RegistryProblem>] {
        let (access, problems) = await RegistryAccess().resolving(references, store: store, settings: settings, environment: environment)
        guard let engine = try? SingleEngine(settings: settings) else {
            return Dictionary(references.compactMap { $0.tagURL }.map { ($0, .failure(RegistryProblem("no network transport"))) },
                              uniquingKeysWith: { first, _ in first })
        }
        defer { Task { await engine.close() } }
        var results: [String: Result<[ArtifactLayer], RegistryProblem>] = [:]
        for reference in references {
            guard let key = reference.tagURL, let tag = reference.tag, results[key] == nil else { continue }
            let authorization = access.authorization(for: reference)
            var layers: [ArtifactLayer] = []
            var failure: RegistryProblem?
            // A pinned tag's manifest is asked by its digest, which its bytes must have.
            var queue = [reference.digest.map { "sha256:" + $0 } ?? tag]
            var seen: Set<String> = []
            while let name = queue.first, failure == nil {
                queue.removeFirst()
                guard seen.insert(name).inserted, seen.count <= 64 else { continue }
                switch await document(reference.apiBase + "/manifests/" + name, expected: name.hasPrefix("sha256:") ? String(name.dropFirst(7)) : nil,
                                      authorization: authorization, engine: engine, store: store, settings: settings) {
                case .success(let document):
                    layers += (document.layers ?? []).compactMap { layer in
                        guard layer.digest.hasPrefix("sha256:") else { return nil }
                        return ArtifactLayer(digest: String(layer.digest.dropFirst(7)), size: layer.size,
                                             title: layer.annotations?["org.opencontainers.image.title"])
                    }
                    queue += (document.manifests ?? []).map(\.digest)
                case .failure(let problem):
                    failure = problem
                }
            }
            if failure == nil, layers.isEmpty { failure = RegistryProblem("its manifest lists no layers") }
            if let failure {
                let said = problems.first { $0.hasPrefix("registry \(reference.registry.lowercased())") }
                results[key] = .failure(RegistryProblem(failure.description + (said.map { " (\($0))" } ?? "")))
            } else {
                results[key] = .success(layers)
            }
        }
        return results
    }

    private static func document(_ url: String, expected: String?, authorization: String?, engine: SingleEngine, store: ContentStore,
                                 settings: FetchSettings) async -> Result<ManifestDocument, RegistryProblem> {
        var headers = ["Accept: " + manifestTypes.joined(separator: ", ")]
        if let authorization { headers.append("Authorization: " + authorization) }
        let request = TransferRequest(url: settings.locator.rewrite.apply(url), headers: headers, deadline: 0)
        let reply = await engine.exchange(request) { deadline in
            ResponseHandler(store: store, expected: nil, maxSize: 4 << 20, conditional: false, deadline: deadline,
                            entryTimeout: settings.entryTimeout, url: url, resume: nil, resumeThreshold: .max)
        }
        switch reply.result {
        case .success(.body(let file, _, _)):
            defer { unlink(file.path) }
            if let expected, file.sha256 != expected {
                return .failure(RegistryProblem("the manifest asked by its digest sha256:\(expected.prefix(12))… has another (sha256:\(file.sha256.prefix(12))…)"))
            }
            guard let data = FileManager.default.contents(atPath: file.path),
                  let document = try? JSONDecoder().decode(ManifestDocument.self, from: data)
            else { return .failure(RegistryProblem("its manifest is not a manifest worker reads")) }
            return .success(document)
        case .success(.status(let status, _)), .success(.statusAndHeader(let status, _)):
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
