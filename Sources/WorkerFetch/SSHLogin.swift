/// How an `sftp://` request logs in and which host keys it trusts, as the transport sets them
/// (libcurl's SSH options). A kind (sftp://) makes the value; a request with one is private.
/// A class: every request of a run's SFTP origins shares the one value (copies are references).
public final class SSHLogin: Sendable, Equatable, CustomStringConvertible {
    /// The private key file tried first (its public half is derived from it); nil: the agent only.
    public let privateKey: String?
    /// Whether an ssh-agent is asked when the key is refused or there is none (`SSH_AUTH_SOCK`).
    public let usesAgent: Bool
    /// The known_hosts file a host's key must be in.
    public let knownHosts: String
    /// A host missing from `knownHosts` is trusted and added to it (ssh's
    /// `StrictHostKeyChecking=accept-new`); a changed key is refused all the same.
    public let acceptsNewHosts: Bool

    public init(privateKey: String?, usesAgent: Bool, knownHosts: String, acceptsNewHosts: Bool) {
        self.privateKey = privateKey
        self.usesAgent = usesAgent
        self.knownHosts = knownHosts
        self.acceptsNewHosts = acceptsNewHosts
    }

    public static func == (left: SSHLogin, right: SSHLogin) -> Bool {
        left === right
            || (left.privateKey == right.privateKey && left.usesAgent == right.usesAgent && left.knownHosts == right.knownHosts
                && left.acceptsNewHosts == right.acceptsNewHosts)
    }

    /// What a refused login names: the key, the agent, or both.
    public var description: String {
        privateKey.map { "the key \($0)" + (usesAgent ? " and the ssh-agent" : "") } ?? (usesAgent ? "the ssh-agent" : "no key")
    }
}
