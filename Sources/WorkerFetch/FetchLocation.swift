import WorkerManifest

/// One place a request may be fetched from.
public struct FetchLocation: Sendable, Equatable {
    /// As the manifest lists it (what a report names).
    public let listed: String
    /// As requested (after `--rewrite`).
    public let url: String
    public let origin: Origin
    /// How requests to it are signed (an `s3://` URL with credentials).
    public let signing: AWSSigning?
    /// The `Authorization` value its requests carry (a registry's token).
    public let authorization: String?
    /// Whose credentials `authorization` carries (nil: none, or an anonymous token).
    public let credentialUser: String?
    /// How an `sftp://` location logs in and which host keys it trusts.
    public let ssh: SSHLogin?

    public init(
        listed: String, url: String, origin: Origin? = nil, signing: AWSSigning? = nil, authorization: String? = nil,
        credentialUser: String? = nil, ssh: SSHLogin? = nil
    ) {
        self.listed = listed
        self.url = url
        self.origin = origin ?? Origin.of(url)
        self.signing = signing
        self.authorization = authorization
        self.credentialUser = credentialUser
        self.ssh = ssh
    }
}
