import ArgumentParser

/// The options of the registered kinds of URL (oci://, sftp://), handed to them by long name
/// (`Locator.options`): each kind reads its own.
struct KindOptions: ParsableArguments {
    @Flag(
        name: .customLong("plain-http"),
        help:
            "Ask oci:// registries over plain http instead of https (as ORAS's --plain-http). Without it, a loopback registry that does not speak TLS is asked over http after https."
    )
    var plainHTTP = false

    @Option(
        name: .customLong("ssh-key"),
        help: ArgumentHelp(
            "The private key sftp:// URLs log in with (default: the first of ~/.ssh/id_ed25519, id_ecdsa, id_rsa; an ssh-agent is asked too when SSH_AUTH_SOCK is set).",
            valueName: "FILE"))
    var sshKey: String?

    @Option(
        name: .customLong("ssh-known-hosts"),
        help: ArgumentHelp(
            "The known_hosts file an sftp:// host's key must be in (default: ~/.ssh/known_hosts). An unknown or changed key is refused.",
            valueName: "FILE"))
    var sshKnownHosts: String?

    @Flag(
        name: .customLong("ssh-accept-new-hosts"),
        help:
            "Trust an sftp:// host whose key is not in the known_hosts file yet, and add it there (ssh's StrictHostKeyChecking=accept-new); a changed key is still refused."
    )
    var sshAcceptNewHosts = false

    /// The given options by long name (a flag's value is empty).
    var options: [String: String] {
        var options: [String: String] = [:]
        if plainHTTP { options["plain-http"] = "" }
        if let sshKey { options["ssh-key"] = sshKey }
        if let sshKnownHosts { options["ssh-known-hosts"] = sshKnownHosts }
        if sshAcceptNewHosts { options["ssh-accept-new-hosts"] = "" }
        return options
    }
}
