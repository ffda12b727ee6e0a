import FoundationEssentials
import WorkerManifest
import WorkerSupport

/// A shared content-addressed tier (`--remote-cache`): Bazel's remote-cache protocol, where the
/// object of SHA-256 `hex` is `GET`/`HEAD`/`PUT {base}/cas/{hex}` (bazel-remote, nginx with
/// WebDAV, …). docs/REMOTE-CACHE.md describes what is sent where.
public struct RemoteCacheSettings: Sendable, Equatable {
    /// The tier's URL without a trailing slash (user info kept: libcurl sends it as Basic auth).
    public let base: String
    /// `Name: value` lines sent to the tier only, variables expanded (never printed).
    public let headers: [String]
    /// Never uploads (`--remote-cache-read-only`).
    public var readOnly = false
    /// Connect timeout, and the longest silence (or crawl) of a tier answer: a tier is near.
    public var timeout = 2.0
    /// Uploads in flight at once: enough to keep pace with the downloads, so that a body is on the
    /// tier soon after it is verified and runners started together find what another fetched
    /// (BENCHMARKS.md as of 278b2e0, "Mirrors and machines that start together").
    public var uploadsAtOnce = 32
    /// Errors in a row after which the tier is left alone for the rest of the run.
    var errorsToGiveUp = 3
    /// Uploads bodies of entries without a SHA-256 pin too (`manifest --urls`: the hashes it
    /// writes are the names the runners of its manifest will ask the tier for).
    public var uploadsUnpinned = false
    /// Uploads bodies fetched with credentials too (`--remote-cache-upload-private`: the tier is
    /// as private as the origins). Without it they stay local.
    public var uploadsPrivate = false

    /// A tier answer slower than this many bytes a second for `timeout` seconds is cut (a drip).
    static let slowestRate = 16 << 10

    /// The longest one lookup may take, whatever its pace: ten times `timeout`. A tier that drips
    /// just above `slowestRate` would otherwise hold each entry until its own timeout.
    var lookupDeadline: Double { 10 * timeout }

    /// Checks the URL (http or https, a host, no query or fragment) and the headers
    /// (`Name: value`, `${VAR}` expanded from `environment`). The problem names the option.
    public static func make(
        url: String, headers: [String], environment: [String: String]
    ) -> Result<RemoteCacheSettings, RemoteCacheProblem> {
        RemoteCacheURL.parse(url).flatMap { make(url: $0, headers: headers, environment: environment) }
    }

    /// The settings for a checked URL, with the headers checked (`Name: value`, `${VAR}` expanded
    /// from `environment`). The problem names the option.
    public static func make(
        url: RemoteCacheURL, headers: [String], environment: [String: String]
    ) -> Result<RemoteCacheSettings, RemoteCacheProblem> {
        var lines: [String] = []
        for header in headers {
            guard let colon = header.firstIndex(of: ":") else {
                return .failure(RemoteCacheProblem("--remote-header: '\(Redact.short(header))' is not 'Name: value'"))
            }
            let name = Text.trimmingWhitespace(header[..<colon])
            guard HTTPToken.isValidName(name) else {
                return .failure(RemoteCacheProblem("--remote-header: '\(Redact.short(name))' is not a header name"))
            }
            if let refusal = HTTPToken.refusal(forName: name) {
                return .failure(RemoteCacheProblem("--remote-header: '\(name)' is not allowed: \(refusal)"))
            }
            let raw = Text.trimmingWhitespace(header[header.index(after: colon)...])
            switch VariableExpansion.expand(raw, environment: environment) {
            case .failure(let problem):
                return .failure(RemoteCacheProblem("--remote-header '\(name)': \(problem.message)"))
            case .success(let value):
                guard !value.utf8.contains(where: HTTPToken.isForbiddenInValue) else {
                    return .failure(RemoteCacheProblem("--remote-header '\(name)': the value contains a control character"))
                }
                lines.append("\(name): \(value)")
            }
        }
        return .success(RemoteCacheSettings(base: url.base, headers: lines))
    }

    private init(base: String, headers: [String]) {
        self.base = base
        self.headers = headers
    }

    /// Where the object of SHA-256 `hex` lives on the tier.
    func objectURL(_ hex: String) -> String {
        base + "/cas/" + hex
    }

    /// The collections an object's URL lies in, from the top of the base URL's path down to
    /// `cas/`, each with its trailing slash: what a WebDAV server (Apache's mod_dav, rclone) wants
    /// made with MKCOL before it takes a PUT into them (nginx makes them itself).
    var collectionURLs: [String] {
        guard let colon = base.firstIndex(of: ":"), base[colon...].hasPrefix("://") else { return [base + "/cas/"] }
        let afterScheme = base[base.index(colon, offsetBy: 3)...]
        let pathStart = afterScheme.firstIndex(of: "/") ?? afterScheme.endIndex
        var url = String(base[..<pathStart])
        var collections: [String] = []
        for component in base[pathStart...].split(separator: "/") {
            url += "/" + component
            collections.append(url + "/")
        }
        return collections + [base + "/cas/"]
    }

    /// The URL as it may be shown: without user info.
    public var shownURL: String { Redact.url(base) }

    var timeouts: TransferTimeouts {
        TransferTimeouts(connect: timeout, read: timeout, slowestRate: Self.slowestRate)
    }
}
