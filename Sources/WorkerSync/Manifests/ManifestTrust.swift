import WorkerManifest

/// How a run trusts its manifests: the publishers' keys (with keys, every manifest must carry a
/// signature one of them made), a signature's location given by the user instead of the one
/// beside the manifest, and how old the last accepted copy of a remote manifest may be when the
/// manifest cannot be fetched.
public struct ManifestTrust: Sendable {
    public var keys = TrustedKeys()
    /// `--signature URL|FILE` (one manifest only).
    public var signature: String?
    /// `--manifest-max-age`, seconds.
    public var maxAge: Double = 86_400
    /// `--manifest-env NAME`: the only environment variables a remote manifest's `${VAR}` reads.
    public var environment: Set<String> = []

    public init() {}
}

/// The manifests of a run, each where its bytes are to be read: a local file as given, a remote
/// one as fetched (or as last accepted, when it could not be fetched).
public struct OpenedManifests: Sendable {
    public struct Opened: Sendable {
        /// The argument as given (a path or a URL).
        public let argument: String
        /// The file to read.
        public let path: String
        /// What the cache records it under: the URL, or the file's absolute path.
        public let source: String
        let isRemote: Bool
        /// SHA-256 of the bytes read.
        public let object: String
        /// The signature that was verified (kept beside the accepted copy).
        let signature: [UInt8]?
        /// The manifest could not be fetched: the accepted copy serves.
        let fromCopy: Bool
        /// The file name it was read as (its URL's or path's last segment): a signed manifest's
        /// name must agree with it.
        var readAs = ""
        /// The key that signed it, and the file name its signature names (minisign's trusted
        /// comment `file:`), when signed.
        var signer: String?
        var signedFile: String?
    }

    public var manifests: [Opened] = []
    /// URLs fetched for the manifests (manifests and signatures): never pruned as orphans.
    var fetchedURLs: [String] = []

    public var paths: [String] { manifests.map(\.path) }

    /// Remote manifests' copies → their URLs (what errors and the report name).
    public var remoteSources: [String: String] {
        Dictionary(manifests.filter(\.isRemote).map { ($0.path, $0.source) }, uniquingKeysWith: { first, _ in first })
    }
}
