import FoundationEssentials
import Glibc
import WorkerManifest
import WorkerStore
import WorkerSupport

/// How a run's `oci://` blobs are authorized, asked of each registry as its clients ask (Docker,
/// ORAS, containerd): `GET /v2/` first; a registry that answers 200 needs nothing; one that
/// challenges with `WWW-Authenticate: Bearer realm=…,service=…` gets a token for each repository's
/// pull scope from its realm (anonymously, or with Basic credentials when the user has some for
/// that registry); one that challenges with Basic gets the credentials themselves. Credentials
/// come from Docker's config (`$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`) or
/// `REGISTRY_AUTH_FILE` (podman's, the same `auths`), are never printed and never stored: a token
/// lives as long as the run. The authorization goes only to the registry's own origin: a blob the
/// registry redirects to its storage (most answer 307) is fetched without it.
public struct RegistryAccess: Sendable, Equatable {
    /// The `Authorization` value per `REGISTRY/REPOSITORY`.
    private var authorizations: [String: String] = [:]
    /// Registries asked already (whatever they answered).
    private var asked: Set<String> = []
    /// When each token stops being good (monotonic seconds), by `REGISTRY/REPOSITORY`.
    private var expiries: [String: Double] = [:]

    /// When the first token must be asked for again: 30 s before it expires (nil: no token).
    package var refreshBy: Double? {
        expiries.values.min().map { $0 - 30 }
    }


    public init() {}

    /// The `Authorization` value for requests of `reference`'s repository, if it needs one.
    func authorization(for reference: OCIReference) -> String? {
        authorizations[Self.key(reference)]
    }

    private static func key(_ reference: OCIReference) -> String {
        reference.registry.lowercased() + "/" + reference.repository
    }

    /// This access with what the registries of `references` ask for; what could not be had is
    /// said in `problems` (their blobs then fail with the registry's answer, named in the report).
    func resolving(_ references: [OCIReference], store: ContentStore, settings: FetchSettings,
                   environment: [String: String]) async -> (access: RegistryAccess, problems: [String]) {
        let pending = references.filter { !asked.contains($0.registry.lowercased()) }
        guard !pending.isEmpty, let engine = try? SingleEngine(settings: settings) else { return (self, []) }
        defer { Task { await engine.close() } }
        let credentials = DockerCredentials(environment: environment)
        var access = self
        var problems: [String] = []
        var byRegistry: [String: [OCIReference]] = [:]
        for reference in pending { byRegistry[reference.registry.lowercased(), default: []].append(reference) }
        for (registry, references) in byRegistry.sorted(by: { $0.key < $1.key }) {
            access.asked.insert(registry)
            let root = references[0].registryBase + "/v2/"
            let ping = await engine.exchange(TransferRequest(url: settings.locator.rewrite.apply(root), headers: [], deadline: 0)) { deadline in
                .statusAndHeader("www-authenticate", url: root, deadline: deadline)
            }
            guard case .success(.statusAndHeader(let status, let challenge)) = ping.result else {
                if case .failure(let failure) = ping.result { problems.append("registry \(registry): \(failure.message)") }
                continue
            }
            guard status == 401, let challenge = challenge.flatMap(Challenge.init) else { continue }
            let basic = credentials.basic(for: registry)
            if challenge.scheme == "basic" {
                guard let basic else {
                    problems.append("registry \(registry) asks for credentials and there are none for it (docker login)")
                    continue
                }
                for reference in references { access.authorizations[Self.key(reference)] = "Basic " + basic }
                continue
            }
            guard challenge.scheme == "bearer", let realm = challenge.parameters["realm"] else { continue }
            var scopes: Set<String> = []
            for reference in references where scopes.insert(reference.repository).inserted {
                let asked = Monotonic.now()
                switch await token(realm: realm, service: challenge.parameters["service"], repository: reference.repository,
                                   basic: basic, engine: engine, store: store, settings: settings) {
                case .success(let (token, lifetime)):
                    for each in references where each.repository == reference.repository {
                        access.authorizations[Self.key(each)] = "Bearer " + token
                        access.expiries[Self.key(each)] = asked + lifetime
                    }
                case .failure(let problem):
                    problems.append("registry \(registry), repository \(reference.repository): \(problem.description)")
                }
            }
        }
        return (access, problems)
    }

    /// A token for `repository:REPOSITORY:pull` from `realm`.
    private func token(realm: String, service: String?, repository: String, basic: String?, engine: SingleEngine,
                       store: ContentStore, settings: FetchSettings) async -> Result<(token: String, lifetime: Double), RegistryProblem> {
        var query = "scope=" + Self.encoded("repository:\(repository):pull")
        if let service { query += "&service=" + Self.encoded(service) }
        let url = realm + (realm.contains("?") ? "&" : "?") + query
        let request = TransferRequest(url: settings.locator.rewrite.apply(url), headers: basic.map { ["Authorization: Basic " + $0] } ?? [],
                                      deadline: 0)
        let reply = await engine.exchange(request) { deadline in
            ResponseHandler(store: store, expected: nil, maxSize: 1 << 20, conditional: false, deadline: deadline,
                            entryTimeout: settings.entryTimeout, url: url, resume: nil, resumeThreshold: .max)
        }
        switch reply.result {
        case .success(.body(let file, _, _)):
            defer { unlink(file.path) }
            guard let data = FileManager.default.contents(atPath: file.path),
                  let answer = try? JSONDecoder().decode(TokenAnswer.self, from: data),
                  let token = answer.token ?? answer.access_token, !token.isEmpty
            else { return .failure(RegistryProblem("the token service's answer holds no token")) }
            // Without `expires_in`, a token is good for 60 seconds (the distribution spec).
            return .success((token, Double(max(answer.expires_in ?? 60, 1))))
        case .success(.status(let status, _)), .success(.statusAndHeader(let status, _)):
            return .failure(RegistryProblem("the token service answered HTTP \(status)"
                                            + (basic == nil ? " (no credentials for this registry)" : "")))
        case .success(.redirect(let status, _)):
            return .failure(RegistryProblem("the token service answered HTTP \(status) (a redirect)"))
        case .success(.notModified):
            return .failure(RegistryProblem("the token service answered 304"))
        case .failure(let failure):
            return .failure(RegistryProblem("the token service: \(failure.message)"))
        }
    }

    private static func encoded(_ text: String) -> String {
        S3URL.percentEncoded(text, keepingSlashes: false)
    }

    /// A token service's answer (Docker's `token`, OAuth's `access_token`).
    private struct TokenAnswer: Decodable {
        let token: String?
        // swiftlint:disable identifier_name
        let access_token: String?
        let expires_in: Int?
        // swiftlint:enable identifier_name
    }
}

/// Why a registry's token could not be had.
package struct RegistryProblem: Error, Sendable, CustomStringConvertible {
    package let description: String

    init(_ description: String) {
        self.description = description
    }
}

/// A `WWW-Authenticate` challenge: its scheme (lowercase) and parameters (`realm`, `service`, …).
struct Challenge: Equatable {
    let scheme: String
    let parameters: [String: String]

    init?(_ text: String) {
        let trimmed = Text.trimmingWhitespace(Substring(text))
        guard let space = trimmed.firstIndex(of: " ") else {
            guard !trimmed.isEmpty else { return nil }
            (scheme, parameters) = (trimmed.lowercased(), [:])
            return
        }
        scheme = trimmed[..<space].lowercased()
        var parameters: [String: String] = [:]
        var rest = trimmed[trimmed.index(after: space)...]
        while let equals = rest.firstIndex(of: "=") {
            let name = Text.trimmingWhitespace(rest[..<equals]).trimmingPrefix(",").lowercased()
            rest = rest[rest.index(after: equals)...]
            var value = ""
            if rest.first == "\"" {
                rest = rest.dropFirst()
                while let character = rest.first, character != "\"" {
                    if character == "\\", rest.count > 1 { rest = rest.dropFirst() }
                    value.append(rest.first!)
                    rest = rest.dropFirst()
                }
                rest = rest.dropFirst()
            } else {
                value = String(rest.prefix { $0 != "," })
                rest = rest.dropFirst(value.count)
            }
            parameters[Text.trimmingWhitespace(Substring(name))] = value
            rest = rest.drop { $0 == "," || $0 == " " }
        }
        self.parameters = parameters
    }
}

/// The user's registry credentials: the `auths` of Docker's config or `REGISTRY_AUTH_FILE`, by
/// registry. Never printed.
struct DockerCredentials {
    private var byRegistry: [String: String] = [:]

    init(environment: [String: String]) {
        var files: [String] = []
        if let file = environment["REGISTRY_AUTH_FILE"], !file.isEmpty { files.append(file) }
        if let folder = environment["DOCKER_CONFIG"], !folder.isEmpty {
            files.append(folder + "/config.json")
        } else if let home = environment["HOME"], !home.isEmpty {
            files.append(home + "/.docker/config.json")
        }
        for file in files {
            guard let data = FileManager.default.contents(atPath: file),
                  let auths = (try? JSONDecoder().decode(Config.self, from: data))?.auths else { continue }
            for (name, entry) in auths {
                var basic = entry.auth
                if basic == nil, let user = entry.username, let password = entry.password {
                    basic = Data((user + ":" + password).utf8).base64EncodedString()
                }
                guard let basic, !basic.isEmpty else { continue }
                let registry = Self.registry(of: name)
                if byRegistry[registry] == nil { byRegistry[registry] = basic }
            }
        }
    }

    /// Docker's `config.json` (podman's `auth.json`), as far as registries' credentials go.
    private struct Config: Decodable {
        struct Entry: Decodable {
            let auth: String?
            let username: String?
            let password: String?
        }

        let auths: [String: Entry]?
    }

    /// `https://index.docker.io/v1/` → `index.docker.io`; `Registry.Example:5000` → `registry.example:5000`.
    private static func registry(of name: String) -> String {
        var text = Substring(name)
        if let scheme = text.firstRange(of: "://") { text = text[scheme.upperBound...] }
        return text.prefix { $0 != "/" }.lowercased()
    }

    /// The Basic credentials (base64 of `user:password`) for `registry` (lowercase host[:port]).
    func basic(for registry: String) -> String? {
        if let basic = byRegistry[registry] { return basic }
        // Docker Hub's names.
        if registry == "docker.io" || registry == "registry-1.docker.io" { return byRegistry["index.docker.io"] }
        return nil
    }
}
