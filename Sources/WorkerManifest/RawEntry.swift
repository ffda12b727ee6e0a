/// A manifest entry as written: its URL not yet resolved against `base_url`.
public struct RawEntry: Sendable {
    public var url: String
    public var hash: ContentHash?
    /// 1-based position of the entry (its `url` value when present).
    public var line: Int
    public var column: Int
    /// Where the entry appears in a tree (`path:`), checked as a tree path; and its position.
    public var path: String? = nil
    var pathLine = 0
    var pathColumn = 0
    /// Other URLs serving the same bytes (`mirrors:`), as written; only on an entry with a hash.
    public var mirrors: [String] = []
}
