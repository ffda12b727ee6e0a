/// Problems that stop a whole run: the cache itself cannot be used, or another run holds it.
public enum CacheError: Error, Sendable, CustomStringConvertible {
    /// Disk full, permissions, a corrupt index: exit 4.
    case unusable(path: String, reason: String)
    /// Another run held the lock longer than `--wait-lock`: exit 3.
    case locked(path: String, holder: String?)
    /// An output file (`--report`, `--junit`, …) could not be written: exit 4.
    case output(path: String, reason: String)

    public var description: String {
        switch self {
        case .unusable(let path, let reason):
            "cache unusable: \(path): \(reason)"
        case .locked(let path, let holder):
            "cache is locked by another run\(holder.map { " (\($0))" } ?? ""): \(path)"
        case .output(let path, let reason):
            "cannot write \(path): \(reason)"
        }
    }
}

/// Why a sync did not run to its report: its manifests are wrong (exit 2, nothing touched), or
/// the cache cannot be used or is locked.
public enum SyncFailure: Error, Sendable {
    case manifest(ManifestErrors)
    case cache(CacheError)
}
