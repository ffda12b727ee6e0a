/// A manifest entry as written: its URL not yet resolved against `base_url`.
package struct RawEntry: Sendable {
    package var url: String
    package var hash: ContentHash?
    /// 1-based position of the entry (its `url` value when present).
    package var line: Int
    package var column: Int
    /// Where the entry appears in a tree (`path:`), checked as a tree path; and its position.
    package var path: String? = nil
    package var pathLine = 0
    package var pathColumn = 0
    /// Other URLs serving the same bytes (`mirrors:`), as written; only on an entry with a hash.
    package var mirrors: [String] = []
}

