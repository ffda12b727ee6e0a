/// The top-level fields of a manifest other than `entries`.
package struct ManifestHeader: Sendable {
    package var version: Int?
    package var name: String?
    package var namePosition: (line: Int, column: Int) = (0, 0)
    package var baseURL: String?
    package var baseURLPosition: (line: Int, column: Int) = (0, 0)
    /// Header names and raw values (before `${VAR}` expansion), with the position of each value.
    package var headers: [(name: String, value: String, line: Int, column: Int)] = []
    /// The top-level `mirrors` mapping.
    package var mirrors = ManifestMirrors()
    package var hasEntries = false
    /// `serial`: the publisher's number for this version of the manifest, which only grows
    /// (a lower one than the last accepted is a rollback).
    package var serial: Int64?
    /// `expires` (RFC 3339) as Unix seconds: after it the manifest is refused (a freeze).
    package var expires: Double?
    /// Where `serial` and `expires` are written (line, column), for the errors about them.
    package var serialPosition: (line: Int, column: Int) = (0, 0)
    package var expiresPosition: (line: Int, column: Int) = (0, 0)
}
