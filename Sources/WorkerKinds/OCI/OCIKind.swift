import WorkerManifest
import WorkerSupport

/// `oci://REGISTRY/REPOSITORY:TAG` (an artifact — pinned to one manifest with `:TAG@sha256:`: resolved as a run starts to its layers, each an
/// entry `oci://REGISTRY/REPOSITORY:TAG#TITLE` pinned by its digest — a tag that moves is an
/// updated entry — at the path of its `org.opencontainers.image.title`, below the entry's `path`
/// when it has one), and
/// `oci://REGISTRY/REPOSITORY@sha256:DIGEST`: one blob of a registry that speaks the OCI
/// distribution API (Docker Hub, GHCR, ECR, Harbor, Artifactory, GitLab, distribution). The digest
/// is the blob's SHA-256 — worker's own name for objects — so it pins the entry (a `hash:` is
/// optional and must agree). The registry is the origin; requests go to
/// `https://REGISTRY/v2/REPOSITORY/blobs/sha256:DIGEST` (plain http for a loopback registry that
/// does not speak TLS, and under `--plain-http`), authorized as the registry asks (the fetch
/// stage's `RegistryAccess`).
public struct OCIKind: URLKind {
    public var id: URLKindID { .oci }
    public var schemes: [String] { Self.schemes }
    private static let schemes = ["oci"]
    public var roles: URLRoles { [.remote, .signed] }
    public var literalPaths: Bool { false }
    public var sentWithoutCredentials: String? { "sent without credentials: none for this registry (docker login, or REGISTRY_AUTH_FILE)" }

    /// The registry (any spelling of its host and port, as http(s) compares them), and
    /// `/REPOSITORY@sha256:DIGEST`.
    /// (A prefix — `oci://REGISTRY/`, `oci://REGISTRY/team/` — has one too: the rest need not be
    /// a whole reference.)
    public func origin(of url: String) -> (origin: Origin, rest: Substring)? {
        OCIReference.registry(of: url).map { ($0.origin, url[$0.restStart...]) }
    }

    public func problem(entry url: String) -> String? {
        switch OCIReference.parse(url) {
        case .success: nil
        case .failure(let problem): problem.description
        }
    }

    public func problem(prefix: String) -> String? {
        let registry = prefix.dropFirst("oci://".count).prefix { $0 != "/" }
        return Origin.http("https://" + registry) == nil ? ": '\(Redact.short(String(registry)))' is not a registry (HOST[:PORT])" : nil
    }

    /// A blob's: `REPOSITORY@sha256:DIGEST`, as Docker writes a reference without its registry.
    /// A tag's: the folder its layers are put in, by title (`REPOSITORY`); one layer's: its title.
    public func treePath(written: String) -> Result<String, TreePathProblem> {
        guard let reference = OCIReference(written) else {
            return .failure(TreePathProblem(message: "not an oci:// reference: give the entry a 'path'"))
        }
        if reference.isBlob, let digest = reference.digest { return .success(reference.repository + "@sha256:" + digest) }
        return .success(reference.title ?? reference.repository)
    }

    public func impliedHash(of url: String) -> ContentHash? {
        guard let reference = OCIReference(url), reference.isBlob else { return nil }
        return reference.digest.flatMap { try? ContentHash.parse("sha256:" + $0).get() }
    }

    /// A tag stands for its titled layers; a layer's title (`:TAG#TITLE`) for that layer until
    /// it is pinned by its digest.
    public func expands(_ url: String, pinned: Bool) -> Bool {
        guard let reference = OCIReference(url), reference.tag != nil else { return false }
        return reference.title == nil || !pinned
    }

    public var expandedForm: String? { "oci://REGISTRY/REPOSITORY:TAG" }
}

/// A parsed `oci://` reference: the registry, the repository (the distribution spec's grammar:
/// lowercase path components joined by `.`, `_`, `__` or dashes), and a digest or a tag.
public struct OCIReference: Sendable, Equatable {
    /// HOST[:PORT] as written.
    public let registry: String
    let repository: String
    /// The SHA-256 in hex, for `@sha256:`: a blob's, or with a tag (`:TAG@sha256:`, as Docker
    /// pins a reference) the artifact's manifest's.
    public let digest: String?
    /// The tag, for `:TAG`.
    public let tag: String?
    /// The layer of a tag's artifact, for `:TAG#TITLE` (its title annotation).
    public let title: String?
    /// Where the registry is (its host and port as http(s) compares them).
    public let origin: Origin
    let restStart: String.Index

    public static func == (left: OCIReference, right: OCIReference) -> Bool {
        left.registry == right.registry && left.repository == right.repository && left.digest == right.digest && left.tag == right.tag
            && left.title == right.title
    }

    public init?(_ url: String) {
        guard case .success(let reference) = Self.parse(url) else { return nil }
        self = reference
    }

    private init(
        registry: String, repository: String, digest: String?, tag: String?, title: String?, origin: Origin,
        restStart: String.Index
    ) {
        (self.registry, self.repository, self.digest, self.tag, self.title, self.origin, self.restStart) =
            (registry, repository, digest, tag, title, origin, restStart)
    }

    /// A blob (a digest without a tag).
    var isBlob: Bool { tag == nil && digest != nil }

    /// `oci://REGISTRY/REPOSITORY:TAG` (`@sha256:` of its manifest, when pinned) without a
    /// layer's title.
    var tagURL: String? {
        tag.map { "oci://\(registry)/\(repository):\($0)" + (digest.map { "@sha256:" + $0 } ?? "") }
    }

    /// The reference in `url`, or what is wrong with it.
    public static func parse(_ url: String) -> Result<OCIReference, OCIReferenceProblem> {
        guard url.utf8.count > 6, url.prefix(6).lowercased() == "oci://" else { return .failure(OCIReferenceProblem("not an oci:// URL")) }
        let after = url.dropFirst(6)
        guard let slash = after.firstIndex(of: "/") else {
            return .failure(OCIReferenceProblem("'\(Redact.short(url))' has no repository (oci://REGISTRY/REPOSITORY@sha256:DIGEST)"))
        }
        let registry = String(after[..<slash])
        guard let (origin, _) = Self.registry(of: url) else {
            return .failure(OCIReferenceProblem("'\(Redact.short(registry))' is not a registry (HOST[:PORT])"))
        }
        var name = after[after.index(after: slash)...]
        var title: String?
        if let hash = name.firstIndex(of: "#") {
            title = String(name[name.index(after: hash)...])
            name = name[..<hash]
            guard let title, !title.isEmpty, TreePath.problem(title) == nil else {
                return .failure(OCIReferenceProblem("'\(Redact.short(url))': a layer's title after '#' is a relative path"))
            }
        }
        var digest: String?
        var tag: String?
        if let at = name.firstIndex(of: "@") {
            let value = name[name.index(after: at)...]
            guard value.hasPrefix("sha256:"), value.utf8.count == 71,
                value.dropFirst(7).utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
            else { return .failure(OCIReferenceProblem("'\(Redact.short(url))': a digest is sha256: and 64 lowercase hex digits")) }
            digest = String(value.dropFirst(7))
            name = name[..<at]
        }
        if let colon = name.lastIndex(of: ":"), !name[colon...].contains("/") {
            let value = name[name.index(after: colon)...]
            guard isTag(value) else {
                return .failure(OCIReferenceProblem("'\(Redact.short(url))': a tag is 1 to 128 of A-Z a-z 0-9 _ . - (not first . or -)"))
            }
            tag = String(value)
            name = name[..<colon]
        } else if digest == nil {
            return .failure(OCIReferenceProblem("'\(Redact.short(url))' names no digest (@sha256:…) nor tag (:TAG)"))
        }
        guard isRepository(name) else {
            return .failure(
                OCIReferenceProblem(
                    "'\(Redact.short(String(name)))' is not a repository name (lowercase letters and digits, "
                        + "components joined by '.', '_', '__' or '-', separated by '/')"))
        }
        guard title == nil || tag != nil else {
            return .failure(OCIReferenceProblem("'\(Redact.short(url))': a layer's title (#TITLE) follows a tag (:TAG)"))
        }
        return .success(
            OCIReference(
                registry: registry, repository: String(name), digest: digest, tag: tag, title: title,
                origin: origin, restStart: slash))
    }

    /// The registry of an `oci://` URL or prefix as an origin (its host and port as http(s)
    /// compares them), and where the rest begins (its `/`, or the end).
    static func registry(of url: String) -> (origin: Origin, restStart: String.Index)? {
        guard url.utf8.count > 6, url.prefix(6).lowercased() == "oci://" else { return nil }
        let after = url.dropFirst(6)
        let end = after.firstIndex(of: "/") ?? after.endIndex
        let registry = after[..<end]
        guard !registry.isEmpty, !registry.contains("@"), let (connect, rest) = Origin.http("https://" + registry), rest.isEmpty else {
            return nil
        }
        // Named as written, its port once (`oci://127.0.0.1:5000`, `oci://ghcr.io:443`).
        var host = registry.lowercased()[...]
        if let colon = host.lastIndex(of: ":"), !host[colon...].contains("]") { host = host[..<colon] }
        return (Origin(scheme: "oci", host: connect.host, port: connect.port, written: String(host)), end)
    }

    private static func isTag(_ text: Substring) -> Bool {
        guard let first = text.utf8.first, (1...128).contains(text.utf8.count), first != UInt8(ascii: "."), first != UInt8(ascii: "-")
        else { return false }
        return text.utf8.allSatisfy {
            isAlphanumeric($0) || (65...90).contains($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".")
                || $0 == UInt8(ascii: "-")
        }
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (97...122).contains(byte) || (48...57).contains(byte)
    }

    /// `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*`
    private static func isRepository(_ name: Substring) -> Bool {
        guard !name.isEmpty, name.utf8.count <= 255 else { return false }
        for component in name.split(separator: "/", omittingEmptySubsequences: false) {
            let bytes = Array(component.utf8)
            guard let first = bytes.first, let last = bytes.last, isAlphanumeric(first), isAlphanumeric(last) else { return false }
            var index = 0
            while index < bytes.count {
                let byte = bytes[index]
                if isAlphanumeric(byte) { index += 1; continue }
                // A separator: `.`, `_`, `__` or a run of `-`, then an alphanumeric.
                var end = index + 1
                if byte == UInt8(ascii: "_"), end < bytes.count, bytes[end] == UInt8(ascii: "_") { end += 1 }
                if byte == UInt8(ascii: "-") { while end < bytes.count, bytes[end] == UInt8(ascii: "-") { end += 1 } }
                guard byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-"),
                    end < bytes.count, isAlphanumeric(bytes[end])
                else { return false }
                index = end
            }
        }
        return true
    }
}

/// What is wrong with an `oci://` reference.
public struct OCIReferenceProblem: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}

extension URLKindID {
    public static let oci = URLKindID("oci")
}
