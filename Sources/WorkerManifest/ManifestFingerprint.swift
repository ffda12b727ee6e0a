import Crypto
import WorkerSupport

/// A stable digest of what manifests ask for, for CI cache keys: the set of (resolved URL,
/// normalized hash) pairs plus each manifest's name, base URL and header names. Key order,
/// comments, whitespace, quoting, hash spelling and entry order do not change it; header values are
/// left out (they hold secrets that rotate without changing what is cached).
public enum ManifestFingerprint {
    public static func digest(_ manifests: ManifestSet) -> String {
        var lines: [String] = ["worker-fingerprint 1"]
        for manifest in manifests.manifests {
            lines.append(
                "manifest \(manifest.name) base=\(manifest.baseURL ?? "-") headers=\(manifest.headers.map { $0.name.lowercased() }.sorted().joined(separator: ","))"
            )
        }
        let entries = manifests.entries.map { "\($0.url) \($0.hash?.description ?? "-")" }.sorted()
        lines.append(contentsOf: entries)
        var hasher = SHA256()
        for line in lines {
            hasher.update(data: Array(line.utf8))
            hasher.update(data: [0x0a])
        }
        return Hex.encode(hasher.finalize())
    }
}
