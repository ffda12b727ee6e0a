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
            let statement = try database.prepare(
                """
                SELECT serial, object, accepted_at, checked_at FROM accepted_manifests WHERE source = ?
                """)
            statement.bind([.text(key(source))])
            guard try statement.step() else { return nil }
            return AcceptedManifest(
                source: source, serial: statement.isNull(0) ? nil : statement.int(0),
                object: statement.text(1) ?? "", acceptedAt: statement.double(2), checkedAt: statement.double(3))
        }
    }

    /// Records (or replaces) what was accepted for its source.
    public func recordAccepted(_ manifest: AcceptedManifest) throws(CacheError) {
        try wrap {
            try database.prepare(
                """
                INSERT INTO accepted_manifests(source, serial, object, accepted_at, checked_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT(source) DO UPDATE SET serial = excluded.serial, object = excluded.object,
                    accepted_at = excluded.accepted_at, checked_at = excluded.checked_at
                """
            ).run([
                .text(key(manifest.source)), manifest.serial.map { .int($0) } ?? .null, .text(manifest.object),
                .double(manifest.acceptedAt), .double(manifest.checkedAt),
            ])
        }
    }
}

/// The serial last accepted for a manifest's name and the key that signed it, wherever the
/// manifest was read from (TUF's rollback check is by role, not by location), with the SHA-256
/// of the bytes accepted under it (the same serial with other bytes is refused).
public struct AcceptedSerial: Sendable, Equatable {
    public let identity: String
    /// The key that signed it ("" for an unsigned remote manifest).
    public let signer: String
    public let serial: Int64
    public let object: String

    public init(identity: String, signer: String, serial: Int64, object: String) {
        self.identity = identity
        self.signer = signer
        self.serial = serial
        self.object = object
    }
}

extension CacheIndex {
    /// The serial accepted for `identity` signed by `signer`; nil when none.
    public func acceptedSerial(identity: String, signer: String) throws(CacheError) -> AcceptedSerial? {
        try wrap {
            guard try Self.hasTable(database, "manifest_serials") else { return nil }
            let statement = try database.prepare("SELECT serial, object FROM manifest_serials WHERE identity = ? AND signer = ?")
            statement.bind([.text(identity), .text(signer)])
            guard try statement.step() else { return nil }
            return AcceptedSerial(identity: identity, signer: signer, serial: statement.int(0), object: statement.text(1) ?? "")
        }
    }

    /// Records the serial accepted now (it only grows: a lower one is never written over a higher).
    public func recordSerial(_ accepted: AcceptedSerial) throws(CacheError) {
        try wrap {
            try database.prepare(
                """
                INSERT INTO manifest_serials(identity, signer, serial, object) VALUES (?, ?, ?, ?)
                ON CONFLICT(identity, signer) DO UPDATE SET serial = excluded.serial, object = excluded.object
                    WHERE excluded.serial >= manifest_serials.serial
                """
            ).run([.text(accepted.identity), .text(accepted.signer), .int(accepted.serial), .text(accepted.object)])
        }
    }
}

extension CacheIndex {
    /// Marks the rows of these URLs as a manifest's or a signature's documents: kept, never an
    /// orphan, and not counted as entries.
    public func recordDocuments(_ urls: [String]) throws(CacheError) {
        guard !urls.isEmpty else { return }
        try wrap {
            let statement = try database.prepare("INSERT OR IGNORE INTO manifest_documents(url) VALUES (?)")
            for url in urls { try statement.run([.text(key(url))]) }
        }
    }

    /// The documents' URLs as the index keys them.
    public func manifestDocuments() throws(CacheError) -> Set<String> {
        try wrap {
            guard try Self.hasTable(database, "manifest_documents") else { return [] }
            let statement = try database.prepare("SELECT url FROM manifest_documents")
            var urls = Set<String>()
            while try statement.step() { if let url = statement.text(0) { urls.insert(url) } }
            return urls
        }
    }
}
