/// The top-level fields of a manifest other than `entries`.
public struct ManifestHeader: Sendable {
    public var version: Int?
    public var name: String?
    public var namePosition: (line: Int, column: Int) = (0, 0)
    public var baseURL: String?
    var baseURLPosition: (line: Int, column: Int) = (0, 0)
    /// Header names and raw values (before `${VAR}` expansion), with the position of each value.
    public var headers: [(name: String, value: String, line: Int, column: Int)] = []
    /// The top-level `mirrors` mapping.
    public var mirrors = ManifestMirrors()
    var hasEntries = false
    /// `serial`: the publisher's number for this version of the manifest, which only grows
    /// (a lower one than the last accepted is a rollback).
    public var serial: Int64?
    /// `expires` (RFC 3339) as Unix seconds: after it the manifest is refused (a freeze).
    public var expires: Double?
    /// Where `serial` and `expires` are written (line, column), for the errors about them.
    public var serialPosition: (line: Int, column: Int) = (0, 0)
    public var expiresPosition: (line: Int, column: Int) = (0, 0)
}
