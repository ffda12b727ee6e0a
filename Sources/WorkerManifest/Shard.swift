import Crypto

/// One of N disjoint parts of the entries, by a stable hash of each URL: N workers (Kubernetes
/// Indexed Job pods, say) split a manifest with no coordination, and every URL lands in exactly
/// one shard whatever the order of the manifest or the machine.
public struct Shard: Sendable, Equatable, CustomStringConvertible {
    public let index: Int
    public let count: Int

    public static let all = Shard(index: 0, count: 1)

    public init(index: Int, count: Int) {
        precondition(count >= 1 && (0..<count).contains(index))
        self.index = index
        self.count = count
    }

    /// Parses `I/N` with 0 ≤ I < N.
    public init?(_ text: String) {
        let parts = text.split(separator: "/")
        guard parts.count == 2, let index = Int(parts[0]), let count = Int(parts[1]), count >= 1, (0..<count).contains(index)
        else { return nil }
        self.init(index: index, count: count)
    }

    public var description: String { "\(index)/\(count)" }

    /// The shard of `url`: the first 8 bytes of its SHA-256, modulo the count.
    public static func number(of url: String, count: Int) -> Int {
        let digest = SHA256.hash(data: Array(url.utf8))
        let value = digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return Int(value % UInt64(count))
    }

    public func contains(_ url: String) -> Bool {
        count == 1 || Self.number(of: url, count: count) == index
    }

    /// The manifests with only this shard's entries.
    public func filter(_ manifests: ManifestSet) -> ManifestSet {
        guard count > 1 else { return manifests }
        return ManifestSet(manifests: manifests.manifests, entries: ManifestEntries(manifests.entries.lazy.filter { contains($0.url) }))
    }
}
