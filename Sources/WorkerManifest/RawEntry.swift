/// A manifest entry as written: its URL not yet resolved against `base_url`.
public struct RawEntry: Sendable {
    public var url: String
    public var hash: ContentHash?
    /// 1-based position of the entry (its `url` value when present).
    public var line: Int
    public var column: Int
    /// Where the entry appears in a tree (`path:`), checked as a tree path; and its position.
    public var path: String? = nil
    public var pathLine = 0
    public var pathColumn = 0
    /// Other URLs serving the same bytes (`mirrors:`), as written; only on an entry with a hash.
    public var mirrors: [String] = []
}

/// The top-level fields of a manifest other than `entries`.
public struct ManifestHeader: Sendable {
    public var version: Int?
    public var name: String?
    public var baseURL: String?
    public var baseURLPosition: (line: Int, column: Int) = (0, 0)
    /// Header names and raw values (before `${VAR}` expansion), with the position of each value.
    public var headers: [(name: String, value: String, line: Int, column: Int)] = []
    /// The top-level `mirrors` mapping.
    public var mirrors = ManifestMirrors()
    public var hasEntries = false
    /// `serial`: the publisher's number for this version of the manifest, which only grows
    /// (a lower one than the last accepted is a rollback).
    public var serial: Int64?
    /// `expires` (RFC 3339) as Unix seconds: after it the manifest is refused (a freeze).
    public var expires: Double?
    /// Where `serial` and `expires` are written (line, column), for the errors about them.
    public var serialPosition: (line: Int, column: Int) = (0, 0)
    public var expiresPosition: (line: Int, column: Int) = (0, 0)
}
