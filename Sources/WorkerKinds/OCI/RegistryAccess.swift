import FoundationEssentials
import Glibc
import WorkerFetch
import WorkerManifest
import WorkerStore
import WorkerSupport

/// How a run's `oci://` registries are reached and authorized, asked of each registry as its
/// clients ask (Docker, ORAS, containerd): `GET /v2/` first; a registry that answers 200 needs
/// nothing; one that challenges with `WWW-Authenticate: Bearer realm=…,service=…` gets a token for
/// each repository's pull scope from its realm (anonymously, or with Basic credentials when the
/// user has some for that registry); one that challenges with Basic gets the credentials
/// themselves. Credentials come from Docker's config (`$DOCKER_CONFIG/config.json`, else
/// `~/.docker/config.json`) or `REGISTRY_AUTH_FILE` (podman's, the same `auths`), are never
/// printed and never stored: a token lives as long as the run.
///
/// Every request of a registry is a location like any other: `--rewrite` sends it (an `oci://`
/// rule to another registry, whose own credentials it then gets; an http(s) rule for the API's
/// URL), `--rewrite-strict` checks it — the probe, the realm, tags and manifests. Credentials go
/// only to the origin they are had for, as the registry is reached (the one the config names),
/// and to a realm on that origin or over https; an authorization goes only with requests to that
/// origin (a blob the registry redirects to its storage is fetched without it). A registry is
/// asked over https; one on loopback that does not speak TLS over plain http (as Docker asks
/// one), and every one under `--plain-http` (ORAS's option).
public struct RegistryAccess: Sendable, Equatable {
    /// An authorization a registry gave or asked for: the header's value, the origin it goes to
    /// (no other), and the user whose credentials it carries (nil: anonymous).
    struct Grant: Sendable, Equatable {
        let value: String
        let origin: Origin
        let user: String?
    }

    /// Per `REGISTRY/REPOSITORY`.
    private var grants: [String: Grant] = [:]
    /// Registries asked already (whatever they answered).
    private var asked: Set<String> = []
    /// When each token stops being good (monotonic seconds), by `REGISTRY/REPOSITORY`.
    private var expiries: [String: Double] = [:]
    /// `--plain-http`: every registry over plain http.
    public var plainHTTP = false
    /// Loopback registries that did not speak TLS when asked over https: asked over http since.
    private var plain: Set<String> = []

    /// When the first token must be asked for again: 30 s before it expires (nil: no token).
    var refreshBy: Double? {
        expiries.values.min().map { $0 - 30 }
    }

    public init() {}

    /// This access as it was before any registry was asked, but for how each is reached (to ask
    /// again: tokens that expire).
    var renewing: RegistryAccess {
        var access = RegistryAccess()
        (access.plainHTTP, access.plain) = (plainHTTP, plain)
        return access
    }

    /// `https://REGISTRY`, or `http://` under `--plain-http` and for a loopback registry that
    /// does not speak TLS.
    func base(of reference: OCIReference) -> String {
        (plainHTTP || plain.contains(reference.registry.lowercased()) ? "http://" : "https://") + reference.registry
    }

    /// Where the repository's API is.
    func apiBase(of reference: OCIReference) -> String {
        base(of: reference) + "/v2/" + reference.repository
    }

    /// The authorization for a request of `reference`'s repository at `url`, if it needs one and
    /// `url` is on the origin it was had for.
    func grant(for reference: OCIReference, at url: String) -> Grant? {
        guard let grant = grants[Self.key(reference)], URLKinds.parse(url)?.origin == grant.origin else { return nil }
        return grant
    }

    private static func key(_ reference: OCIReference) -> String {
        reference.registry.lowercased() + "/" + reference.repository
    }

    /// Whether a run may send a request of `reference`'s registry to `url` (after `--rewrite`):
    /// not strict; the URL is allowed as any location is; or it is on the registry's own host and
    /// port and the registry is what a rule's TO names (`oci://MIRROR/`).
    static func mayRequest(_ url: String, of reference: OCIReference, rewrite: URLRewrite) -> Bool {
        guard rewrite.strict, !rewrite.mayRequest(url) else { return true }
        guard let origin = URLKinds.parse(url)?.origin, origin.host == reference.origin.host, origin.port == reference.origin.port
        else { return false }
        return rewrite.mayRequest("oci://" + reference.registry + "/" + reference.repository)
    }

    static func strictRefusal(_ url: String) -> RegistryProblem {
        RegistryProblem(
            "\(Redact.url(url)), which no --rewrite rule covers and no --allow-origin allows, is not asked (--rewrite-strict)",
            refused: true)
    }

    /// This access with what the registries of `references` (as `--rewrite` sends them) ask for;
    /// what could not be had is said in `problems` (their blobs then fail with the registry's
    /// answer, named in the report).
    func resolving(
        _ references: [OCIReference], store: ContentStore, settings: FetchSettings,
        environment: [String: String]
    ) async -> (access: RegistryAccess, problems: [RegistryProblem]) {
        let pending = references.filter { !asked.contains($0.registry.lowercased()) }
        guard !pending.isEmpty, let engine = try? SingleEngine(settings: settings) else { return (self, []) }
        defer { Task { await engine.close() } }
        let credentials = DockerCredentials(environment: environment)
        let rewrite = settings.locator.rewrite
        var access = self
        var problems: [RegistryProblem] = []
        var byRegistry: [String: [OCIReference]] = [:]
        for reference in pending { byRegistry[reference.registry.lowercased(), default: []].append(reference) }
        for (registry, references) in byRegistry.sorted(by: { $0.key < $1.key }) {
            access.asked.insert(registry)
            let probe: Probe
            switch await access.probe(references[0], engine: engine, rewrite: rewrite) {
            case .success(let answer): probe = answer
            case .failure(let problem):
                problems.append(RegistryProblem("registry \(registry): \(problem.description)", refused: problem.refused))
                continue
            }
            guard probe.status == 401, let challenge = probe.challenge.flatMap(Challenge.init) else { continue }
            // The credentials of where the registry is reached (a rule may send it elsewhere).
            let login = credentials.login(for: DockerCredentials.registry(of: probe.url))
            if challenge.scheme == "basic" {
                guard let login else {
                    problems.append(RegistryProblem("registry \(registry) asks for credentials and there are none for it (docker login)"))
                    continue
                }
                for reference in references {
                    access.grants[Self.key(reference)] = Grant(value: "Basic " + login.basic, origin: probe.origin, user: login.user)
                }
                continue
            }
            guard challenge.scheme == "bearer", let realm = challenge.parameters["realm"] else { continue }
            var scopes: Set<String> = []
            for reference in references where scopes.insert(reference.repository).inserted {
                let asked = Monotonic.now()
                switch await token(
                    realm: realm, service: challenge.parameters["service"], reference: reference, probe: probe,
                    login: login, engine: engine, store: store, settings: settings)
                {
                case .success(let (token, lifetime)):
                    for each in references where each.repository == reference.repository {
                        access.grants[Self.key(each)] = Grant(value: "Bearer " + token, origin: probe.origin, user: login?.user)
                        access.expiries[Self.key(each)] = asked + lifetime
                    }
                case .failure(let problem):
                    problems.append(
                        RegistryProblem(
                            "registry \(registry), repository \(reference.repository): \(problem.description)",
                            refused: problem.refused))
                }
            }
        }
        return (access, problems)
    }

    /// What `GET /v2/` answered, and where it was asked.
    struct Probe {
        let url: String
        let origin: Origin
        let status: Int
        let challenge: String?
    }

    /// `GET /v2/` of `reference`'s registry, over https (plain http under `--plain-http`); a
    /// loopback registry whose TLS handshake fails (a plain-HTTP port) is asked again over http,
    /// and reached so for the rest of the run.
    private mutating func probe(
        _ reference: OCIReference, engine: SingleEngine, rewrite: URLRewrite
    ) async -> Result<Probe, RegistryProblem> {
        while true {
            let url = rewrite.apply(base(of: reference) + "/v2/")
            guard Self.mayRequest(url, of: reference, rewrite: rewrite) else { return .failure(Self.strictRefusal(url)) }
            guard let origin = URLKinds.parse(url)?.origin else { return .failure(RegistryProblem("\(Redact.url(url)) is not a URL")) }
            let reply = await engine.exchange(TransferRequest(url: url, headers: [], deadline: 0)) { deadline in
                .statusAndHeader("www-authenticate", url: url, deadline: deadline)
            }
            switch reply.result {
            case .success(.statusAndHeader(let status, let challenge)):
                return .success(Probe(url: url, origin: origin, status: status, challenge: challenge))
            case .failure(let failure)
            where failure.detail == .tls(.handshakeRejected) && reference.origin.host == "localhost"
                && !plainHTTP && !plain.contains(reference.registry.lowercased()):
                plain.insert(reference.registry.lowercased())
            case .failure(let failure):
                return .failure(RegistryProblem(failure.message))
            case .success(let other):
                return .failure(RegistryProblem("GET /v2/ answered \(other)"))
            }
        }
    }

    /// A token for `repository:REPOSITORY:pull` from `realm`. Credentials go to a realm on the
    /// origin the registry was reached at, or over https; a realm elsewhere over plain http is
    /// refused with them (asked without, when there are none).
    private func token(
        realm: String, service: String?, reference: OCIReference, probe: Probe, login: DockerCredentials.Login?,
        engine: SingleEngine, store: ContentStore, settings: FetchSettings
    ) async -> Result<(token: String, lifetime: Double), RegistryProblem> {
        var query = "scope=" + Self.encoded("repository:\(reference.repository):pull")
        if let service { query += "&service=" + Self.encoded(service) }
        let url = settings.locator.rewrite.apply(realm + (realm.contains("?") ? "&" : "?") + query)
        guard !url.utf8.contains(where: HTTPToken.isForbiddenInValue), let parsed = URLKinds.parse(url), parsed.kind.id == .http else {
            return .failure(RegistryProblem("the token realm '\(Redact.short(realm))' is not an http(s) URL"))
        }
        guard Self.mayRequest(url, of: reference, rewrite: settings.locator.rewrite) else {
            return .failure(RegistryProblem("the token realm " + Self.strictRefusal(url).description, refused: true))
        }
        if let login, parsed.origin != probe.origin, parsed.origin.scheme != "https" {
            return .failure(
                RegistryProblem(
                    "the token realm \(parsed.origin.name) is on another origin over plain http: "
                        + "the credentials for \(login.user) are not sent to it (refused)", refused: true))
        }
        let request = TransferRequest(url: url, headers: login.map { ["Authorization: Basic " + $0.basic] } ?? [], deadline: 0)
        let reply = await engine.exchange(request) { deadline in
            ResponseHandler(
                store: store, expected: nil, maxSize: 1 << 20, conditional: false, deadline: deadline,
                entryTimeout: settings.entryTimeout, url: url, resume: nil, resumeThreshold: .max)
        }
        switch reply.result {
        case .success(.body(let file, _, _)):
            defer { unlink(file.path) }
            guard let data = FileManager.default.contents(atPath: file.path),
                let answer = try? JSONDecoder().decode(TokenAnswer.self, from: data),
                let token = answer.token ?? answer.access_token, !token.isEmpty
            else { return .failure(RegistryProblem("the token service's answer holds no token")) }
            // A token goes into a header: a control character (CR LF) would end it there.
            guard !token.utf8.contains(where: HTTPToken.isForbiddenInValue), !token.contains(" ") else {
                return .failure(RegistryProblem("the token service's token holds a control character or a space (refused)"))
            }
            // Without `expires_in`, a token is good for 60 seconds (the distribution spec).
            return .success((token, Double(max(answer.expires_in ?? 60, 1))))
        case .success(.status(let status, _)), .success(.statusAndHeader(let status, _)):
            if let login, status == 401 || status == 403 {
                return .failure(
                    RegistryProblem(
                        "the token service refused the credentials for \(login.user) (HTTP \(status))",
                        refused: true))
            }
            return .failure(
                RegistryProblem(
                    "the token service answered HTTP \(status)"
                        + (login == nil ? " (sent without credentials: none for this registry)" : "")))
        case .success(.redirect(let status, _)):
            return .failure(RegistryProblem("the token service answered HTTP \(status) (a redirect)"))
        case .success(.notModified):
            return .failure(RegistryProblem("the token service answered 304"))
        case .failure(let failure):
            return .failure(RegistryProblem("the token service: \(failure.message)"))
        }
    }

    private static func encoded(_ text: String) -> String {
        LiteralPath.percentEncoded(text, keepingSlashes: false)
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

/// Why a registry's token or document could not be had.
public struct RegistryProblem: Error, Sendable, CustomStringConvertible {
    public let description: String
    /// Refused: the credentials by the registry, or a request by the rules (credentials that
    /// would go where they must not, `--rewrite-strict`): another run with the same settings
    /// fails alike.
    public let refused: Bool

    init(_ description: String, refused: Bool = false) {
        self.description = description
        self.refused = refused
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
    /// One registry's credentials: base64 of `user:password`, and the user.
    struct Login: Equatable {
        let basic: String
        let user: String
    }

    private var byRegistry: [String: Login] = [:]

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
                let auths = (try? JSONDecoder().decode(Config.self, from: data))?.auths
            else { continue }
            for (name, entry) in auths {
                var basic = entry.auth
                if basic == nil, let user = entry.username, let password = entry.password {
                    basic = Data((user + ":" + password).utf8).base64EncodedString()
                }
                // Base64 of `user:password`, as it goes into a header: anything else is no login.
                guard let basic, !basic.isEmpty, basic.utf8.allSatisfy(Self.isBase64),
                    let decoded = Data(base64Encoded: basic), let pair = String(data: decoded, encoding: .utf8),
                    let colon = pair.firstIndex(of: ":"), !pair.utf8.contains(where: HTTPToken.isForbiddenInValue)
                else { continue }
                let registry = Self.registry(of: name)
                if byRegistry[registry] == nil { byRegistry[registry] = Login(basic: basic, user: String(pair[..<colon])) }
            }
        }
    }

    private static func isBase64(_ byte: UInt8) -> Bool {
        (65...90).contains(byte) || (97...122).contains(byte) || (48...57).contains(byte) || byte == UInt8(ascii: "+")
            || byte == UInt8(ascii: "/") || byte == UInt8(ascii: "=")
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

    /// `https://index.docker.io/v1/` → `index.docker.io`; `Registry.Example:5000` →
    /// `registry.example:5000`; a URL's authority without user info.
    static func registry(of name: String) -> String {
        var text = Substring(name)
        if let scheme = text.firstRange(of: "://") { text = text[scheme.upperBound...] }
        let authority = text.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        return String(authority[(authority.lastIndex(of: "@").map { authority.index(after: $0) } ?? authority.startIndex)...]).lowercased()
    }

    /// The credentials for `registry` (lowercase host[:port]).
    func login(for registry: String) -> Login? {
        if let login = byRegistry[registry] { return login }
        // Docker Hub's names.
        if registry == "docker.io" || registry == "registry-1.docker.io" { return byRegistry["index.docker.io"] }
        return nil
    }
}

extension RegistryAccess: KindAccess {
    public var kind: any URLKind { OCIKind() }

    /// `--plain-http`: every registry over plain http.
    public func with(options: [String: String]) -> any KindAccess {
        var access = self
        access.plainHTTP = options["plain-http"] != nil
        return access
    }

    /// An `oci://` FROM sends the blob to another registry (a pull-through cache), and the
    /// registry's API URL goes where an http(s) rule sends it. A tag's layer is the blob of the
    /// digest it is `expected` to have.
    public func location(
        _ listed: String, rewrite: URLRewrite, origin: Origin?, expected: ContentHash?,
        memo: inout OriginMemo
    ) -> FetchLocation {
        let target = rewrite.apply(listed)
        guard let reference = OCIReference(target),
            let digest = reference.isBlob ? reference.digest : (expected?.algorithm == .sha256 ? expected?.hex : nil)
        else { return FetchLocation(listed: listed, url: target, origin: origin ?? memo.origin(of: target)) }
        let url = rewrite.apply(apiBase(of: reference) + "/blobs/sha256:" + digest)
        let grant = grant(for: reference, at: url)
        return FetchLocation(
            listed: listed, url: url, origin: origin ?? memo.origin(of: url), authorization: grant?.value,
            credentialUser: grant?.user)
    }

    /// The registry's current grant for the repository, on the location's origin only.
    public func authorized(_ location: FetchLocation, rewrite: URLRewrite) -> FetchLocation {
        guard let reference = OCIReference(rewrite.apply(location.listed)) else { return location }
        let grant = grant(for: reference, at: location.url)
        return FetchLocation(
            listed: location.listed, url: location.url, origin: location.origin, signing: location.signing,
            authorization: grant?.value, credentialUser: grant?.user, ssh: location.ssh)
    }

    /// The registry's API URL over https, and over http for one on loopback that may not speak
    /// TLS (either may be asked).
    public func beforeRewrite(_ listed: String) -> [String] {
        guard let reference = OCIReference(listed) else { return [listed] }
        let path = reference.isBlob ? "/blobs/sha256:" + (reference.digest ?? "") : "/manifests/" + (reference.tag ?? "")
        let api = apiBase(of: reference) + path
        guard reference.origin.host == "localhost", api.hasPrefix("https://") else { return [api] }
        return [api, "http://" + api.dropFirst("https://".count)]
    }

    /// Each registry's token for its repositories (where `--rewrite` sends them).
    public func authorizing(
        _ urls: [String], store: ContentStore, settings: FetchSettings,
        environment: [String: String]
    ) async -> (access: any KindAccess, problems: [String]) {
        let references = urls.compactMap { OCIReference(settings.locator.rewrite.apply($0)) }
        guard !references.isEmpty else { return (self, []) }
        let (access, problems) = await resolving(references, store: store, settings: settings, environment: environment)
        return (access, problems.map(\.description))
    }

    public var renewBy: Double? { refreshBy }

    public var unauthorized: any KindAccess { renewing }
}
