import ArgumentParser
import FoundationEssentials
import WorkerManifest
import WorkerSupport
import WorkerSync

/// Signed and remote manifests: the publishers' keys, a signature given by name, and how old the
/// accepted copy of a remote manifest may be when it cannot be fetched.
struct ManifestTrustOptions: ParsableArguments {
    @Option(
        name: .customLong("trusted-keys"),
        help: ArgumentHelp(
            "Trust only manifests signed by these keys: a minisign public key file or an SSH allowed-signers file "
                + "(repeatable; env WORKER_TRUSTED_KEYS, files separated by ':'). An unsigned or badly signed manifest "
                + "is then exit 2, before any request.", valueName: "FILE"))
    var trustedKeys: [String] = []

    @Option(
        name: .customLong("signature"),
        help: ArgumentHelp(
            "The manifest's detached signature (a URL or a file) instead of NAME.minisig or NAME.sig beside it.",
            valueName: "URL|FILE"))
    var signature: String?

    @Option(
        name: .customLong("manifest-max-age"),
        help: ArgumentHelp(
            "When a remote manifest cannot be fetched, use the copy accepted before if it was last current at most this "
                + "long ago (else exit 3, nothing fetched).", valueName: "DURATION"))
    var manifestMaxAge: PositiveSeconds?

    @Option(
        name: .customLong("manifest-env"),
        help: ArgumentHelp(
            "An environment variable a remote manifest's ${VAR} may read (repeatable). A remote manifest reads no other: "
                + "one that names another is exit 2 before any request.", valueName: "NAME"))
    var manifestEnvironment: [String] = []

    /// The trust of the run; a keys file that cannot be used is exit 2 naming its line.
    func trust(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> ManifestTrust {
        var trust = ManifestTrust()
        trust.signature = signature
        if let manifestMaxAge { trust.maxAge = manifestMaxAge.value }
        trust.environment = Set(manifestEnvironment)
        let files =
            !trustedKeys.isEmpty
            ? trustedKeys
            : (environment["WORKER_TRUSTED_KEYS"] ?? "").split(separator: ":").map(String.init).filter { !$0.isEmpty }
        for file in files { try trust.keys.load(file) }
        if signature != nil, trust.keys.isEmpty { throw CommandFailure.signatureWithoutKeys }
        return trust
    }
}
