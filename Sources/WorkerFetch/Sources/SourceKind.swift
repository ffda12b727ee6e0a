/// The sources a download can come from.
public enum SourceKind: String, Sendable, Codable {
    /// The URL itself, over HTTP(S).
    case origin
    /// A `file://` URL: a file in the manifest's folder.
    case local
    /// The shared tier (`--remote-cache`).
    case remote
}
