/// What the cache last accepted of a manifest (a remote one by URL — in a group-shared cache
/// without its user info, as every URL the index keeps — a local one by its absolute path): its serial (a lower one is a rollback), the SHA-256 of the accepted bytes (kept as
/// `manifests/KEY.yaml` beside the index), when it was accepted and when it was last found current.
public struct AcceptedManifest: Sendable, Equatable {
    public let source: String
    public let serial: Int64?
    public let object: String
    public let acceptedAt: Double
    public let checkedAt: Double

    public init(source: String, serial: Int64?, object: String, acceptedAt: Double, checkedAt: Double) {
        self.source = source
        self.serial = serial
        self.object = object
        self.acceptedAt = acceptedAt
        self.checkedAt = checkedAt
    }
}

extension CacheIndex {
    /// The row for `source`; nil when none (or in an index older than the table).
    public func acceptedManifest(_ source: String) throws(CacheError) -> AcceptedManifest? {
        try wrap {
            guard try Self.hasTable(database, "accepted_manifests") else { return nil }
            let statement = try database.prepare("""
                SELECT serial, object, accepted_at, checked_at FROM accepted_manifests WHERE source = ?
                """)
            statement.bind([.text(key(source))])
            guard try statement.step() else { return nil }
            return AcceptedManifest(source: source, serial: statement.isNull(0) ? nil : statement.int(0),
                                    object: statement.text(1) ?? "", acceptedAt: statement.double(2), checkedAt: statement.double(3))
        }
    }

    /// Records (or replaces) what was accepted for its source.
    public func recordAccepted(_ manifest: AcceptedManifest) throws(CacheError) {
        try wrap {
            try database.prepare("""
                INSERT INTO accepted_manifests(source, serial, object, accepted_at, checked_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT(source) DO UPDATE SET serial = excluded.serial, object = excluded.object,
                    accepted_at = excluded.accepted_at, checked_at = excluded.checked_at
                """).run([.text(key(manifest.source)), manifest.serial.map { .int($0) } ?? .null, .text(manifest.object),
                          .double(manifest.acceptedAt), .double(manifest.checkedAt)])
        }
    }
}
