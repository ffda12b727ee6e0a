import WorkerManifest

/// How a run trusts its manifests: the publishers' keys (with keys, every manifest must carry a
/// signature one of them made), a signature's location given by the user instead of the one
/// beside the manifest, and how old the last accepted copy of a remote manifest may be when the
/// manifest cannot be fetched.
package struct ManifestTrust: Sendable {
    package var keys = TrustedKeys()
    /// `--signature URL|FILE` (one manifest only).
    package var signature: String?
    /// `--manifest-max-age`, seconds.
    package var maxAge: Double = 86_400
    /// `--manifest-env NAME`: the only environment variables a remote manifest's `${VAR}` reads.
    package var environment: Set<String> = []

    package init() {}
}

/// The manifests of a run, each where its bytes are to be read: a local file as given, a remote
/// one as fetched (or as last accepted, when it could not be fetched).
package struct OpenedManifests: Sendable {
    package struct Opened: Sendable {
        /// The argument as given (a path or a URL).
        package let argument: String
        /// The file to read.
        package let path: String
        /// What the cache records it under: the URL, or the file's absolute path.
        package let source: String
        package let isRemote: Bool
        /// SHA-256 of the bytes read.
        package let object: String
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

    package var manifests: [Opened] = []
    /// URLs fetched for the manifests (manifests and signatures): never pruned as orphans.
    package var fetchedURLs: [String] = []

    package var paths: [String] { manifests.map(\.path) }

    /// Remote manifests' copies → their URLs (what errors and the report name).
    package var remoteSources: [String: String] {
        Dictionary(manifests.filter(\.isRemote).map { ($0.path, $0.source) }, uniquingKeysWith: { first, _ in first })
    }
}
