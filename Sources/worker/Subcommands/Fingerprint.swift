import ArgumentParser
import WorkerManifest
import WorkerSync

/// `worker fingerprint MANIFEST…`: a stable digest of what the manifests ask for (CI cache keys).
struct Fingerprint: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fingerprint",
        abstract: "Print a stable hash of the normalized manifests (for CI cache keys).",
        discussion: """
            The digest covers the set of (resolved URL, normalized hash) pairs and each manifest's \
            name, base_url and header names: key order, comments, whitespace, quoting, hash spelling \
            and entry order do not change it. Header values are left out (no secrets are needed).

            Examples:
              worker fingerprint manifests/*.yaml
              echo "key=worker-$(worker fingerprint manifests/*.yaml)" >> "$GITHUB_OUTPUT"
            """)

    @Argument(help: "Manifest files (YAML), or their http(s):// or s3:// URLs.")
    var manifests: [String]

    @OptionGroup(title: "Network (for a manifest by URL)") var network: NetworkOptions

    func validate() throws {
        guard !manifests.isEmpty else { throw ValidationError("give at least one manifest") }
    }

    func run() async throws {
        let set: ManifestSet
        if manifests.contains(where: SyncEngine.isRemoteManifest) {
            // A manifest by URL is read as it is now (no cache: through a scratch one, removed at
            // exit); signatures are not checked — the digest decides nothing.
            set = try await openManifests(
                manifests, cacheDirectory: SyncEngine.scratchCacheDirectory, trust: ManifestTrust(),
                fetch: try network.settings(for: Self.self), expandsHeaders: false
            ).set
        } else {
            var loader = ManifestLoader()
            loader.expandsHeaders = false
            do {
                set = try loader.load(paths: manifests)
            } catch {
                throw error
            }
        }
        Console.out(ManifestFingerprint.digest(set) + "\n")
    }
}
