import FoundationEssentials
import Glibc

/// Local entries (`file://`, a relative URL without `base_url`): the one place the scheme is told,
/// and the rule that a file stays inside its manifest's folder. (`LocalFile.open`, in the fetch
/// stage, opens one.)
package enum LocalFile {
    /// Whether `url` names a local file (`file://`). (The one place the scheme is told.)
    package static func isLocal(_ url: String) -> Bool {
        url.hasPrefix("file://")
    }

    /// The path a `file://` URL names; nil for any other URL.
    package static func path(of url: String) -> String? {
        isLocal(url) ? String(url.dropFirst("file://".count)) : nil
    }

    /// Whether `path` is `root` or below it (`/` holds everything).
    package static func isInside(_ path: String, _ root: String) -> Bool {
        root == "/" || path.hasPrefix(root.hasSuffix("/") ? root : root + "/")
    }
}
