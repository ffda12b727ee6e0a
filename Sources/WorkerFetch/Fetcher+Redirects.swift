import FoundationEssentials
import Glibc
import WorkerManifest
import WorkerSupport

/// The redirect rules the fetch stage applies itself (the client's own redirects are off): at
/// most `maxRedirects` hops, no loops, http and https only, never from https down to http; what
/// counts as the same origin (manifest headers never follow a redirect to another).
extension Fetcher {
    /// Where a redirect leads (its path without dot segments), or why it is refused: no Location,
    /// too many hops, a loop, a scheme other than http(s), or a downgrade from https to http.
    static func redirectTarget(
        from current: String, location: String?, status: Int, hop: Int, maxRedirects: Int,
        visited: inout Set<String>
    ) -> Result<String, FetchFailure> {
        guard let location, !location.isEmpty else {
            return .failure(FetchFailure(.redirect, "HTTP \(status) redirect without a Location"))
        }
        guard hop < maxRedirects else {
            return .failure(FetchFailure(.redirect, "more than \(maxRedirects) redirects"))
        }
        guard let base = URL(string: current), let target = URL(string: location, relativeTo: base)?.absoluteURL,
            let scheme = target.scheme?.lowercased()
        else {
            return .failure(FetchFailure(.redirect, "redirect to an invalid Location"))
        }
        guard URLKinds.kind(scheme: scheme)?.id == .http else {
            return .failure(FetchFailure(.scheme, "redirect to a '\(Redact.short(scheme))' URL refused (only http and https)"))
        }
        if HTTPKind.isDowngrade(from: base.scheme?.lowercased() ?? "", to: scheme) {
            return .failure(FetchFailure(.redirect, "redirect from https to http refused"))
        }
        // As libcurl will ask for it: what is checked (`--rewrite-strict`) is what is requested.
        let next = DotSegments.removing(in: target.absoluteString)
        guard visited.insert(next).inserted else {
            return .failure(FetchFailure(.redirect, "redirect loop at \(Redact.url(next))"))
        }
        return .success(next)
    }
}
