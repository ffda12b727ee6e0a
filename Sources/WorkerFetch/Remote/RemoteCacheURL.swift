import FoundationEssentials
import WorkerManifest
import WorkerSupport

/// The shared tier's base URL (`--remote-cache`, `WORKER_REMOTE_CACHE`): http or https, a host,
/// no query or fragment, without a trailing slash; user info kept (libcurl sends it as Basic auth).
public struct RemoteCacheURL: Sendable, Equatable {
    /// The URL without a trailing slash.
    public let base: String

    /// The URL checked, or why it cannot be the tier's, in words that name `--remote-cache` and
    /// never show its password.
    public static func parse(_ url: String) -> Result<RemoteCacheURL, RemoteCacheProblem> {
        var trimmed = url
        while trimmed.hasSuffix("/"), !trimmed.hasSuffix("://") { trimmed.removeLast() }
        guard !url.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7f }),
            URLKinds.kind(of: trimmed)?.id == .http, let parsed = URL(string: trimmed), let host = parsed.host, !host.isEmpty
        else {
            return .failure(
                RemoteCacheProblem(
                    "--remote-cache: '\(Redact.short(Redact.refusedURL(url)))' is not an http(s) URL (e.g. http://cache.internal:8080)"))
        }
        // libcurl refuses an `@` in the user info (`http://u:p@x@host`): it must be `%40`.
        if let schemeEnd = trimmed.firstRange(of: "://") {
            let rest = trimmed[schemeEnd.upperBound...]
            let authority = rest[..<(rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex)]
            if authority.filter({ $0 == "@" }).count > 1 {
                return .failure(
                    RemoteCacheProblem(
                        "--remote-cache: '\(Redact.short(Redact.refusedURL(url)))' has more than one '@': "
                            + "write an '@' in the user name or password as %40"))
            }
        }
        guard !trimmed.contains("?"), !trimmed.contains("#") else {
            return .failure(
                RemoteCacheProblem(
                    "--remote-cache: '\(Redact.short(Redact.refusedURL(url)))' has a query or fragment; give the tier's base URL"))
        }
        return .success(RemoteCacheURL(base: trimmed))
    }
}
