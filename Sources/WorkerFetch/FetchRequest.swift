import WorkerManifest
import WorkerStore

/// One download to make: where from, what it must hash to, what to send. A class: the steps of
/// a download (callbacks on the fetch engine's thread) share it instead of copying its strings.
public final class FetchRequest: Sendable {
    /// The manifest's URL: what the cache records it under (the index, partial bodies, reports).
    public let url: String
    /// What is requested for `url`: `url` itself, where `--rewrite` sends it, or an `s3://`
    /// URL's endpoint URL (`Locator`).
    let fetchURL: String
    /// How requests for `fetchURL` are signed (an `s3://` URL with credentials).
    let signing: AWSSigning?
    /// The `Authorization` value requests for `fetchURL` carry (a registry's token), sent only to
    /// its origin.
    let authorization: String?
    /// Whose credentials `authorization` carries (nil: none, or an anonymous token).
    let credentialUser: String?
    /// How an `sftp://` `fetchURL` logs in and which host keys it trusts.
    let ssh: SSHLogin?
    /// Other places serving the same bytes, tried in order after `fetchURL` fails (pinned
    /// entries' `mirrors`, after `--rewrite`).
    let mirrors: [FetchLocation]
    let expected: ContentHash?
    let headers: [RequestHeader]
    /// For `file://` entries: the manifest folder the file must stay inside (symlinks resolved).
    let localRoot: String?
    /// The stored version's validators: sent as If-None-Match / If-Modified-Since, so the origin
    /// can answer 304 Not Modified without a body.
    let etag: String?
    let lastModified: String?
    /// The origin (scheme, host, port) of `fetchURL` for the per-origin rules; nil for `file://`.
    public let origin: Origin?
    /// Sent with credentials (the manifest's headers, URL user info, a signed bucket request, a
    /// registry's token, an SSH login): what it fetches is as private as the origin.
    public let carriesCredentials: Bool

    /// `route`: where `url` is fetched, when the caller worked it out already (`Locator.route`,
    /// a download group's); else `locator` works it out.
    public init(
        url: String, expected: ContentHash?, headers: [RequestHeader], localRoot: String?,
        etag: String? = nil, lastModified: String? = nil, mirrors: [String] = [], locator: Locator = Locator(),
        route known: Route? = nil
    ) {
        self.url = url
        self.expected = expected
        self.headers = headers
        self.localRoot = localRoot
        self.etag = etag
        self.lastModified = lastModified
        let route = known ?? locator.route(url, mirrors: mirrors, expected: expected)
        let (first, located) = locator.locations(of: route, listed: url)
        if let first {
            (fetchURL, origin, signing, authorization, credentialUser, ssh) = (
                first.url, first.origin, first.signing,
                first.authorization, first.credentialUser, first.ssh
            )
            // Only a pinned entry may come from elsewhere: the hash proves the bytes.
            self.mirrors = expected == nil ? [] : located
        } else {
            (fetchURL, origin, signing, authorization, credentialUser, ssh, self.mirrors) = (url, nil, nil, nil, nil, nil, [])
        }
        carriesCredentials = Self.carriesCredentials(
            headers: headers, signing: signing, authorization: authorization, ssh: ssh,
            url: url)
    }

    /// The request as sent to `location`: named by the URL requested, with the manifest's headers
    /// only when it is on the manifest URL's own origin (they never cross origins).
    private init(_ request: FetchRequest, at location: FetchLocation) {
        url = location.url
        fetchURL = location.url
        signing = location.signing
        authorization = location.authorization
        credentialUser = location.credentialUser
        ssh = location.ssh
        mirrors = []
        expected = request.expected
        origin = location.origin
        headers = request.headers.isEmpty || location.origin == Origin.of(request.url) ? request.headers : []
        localRoot = nil
        etag = request.etag
        lastModified = request.lastModified
        carriesCredentials = Self.carriesCredentials(
            headers: headers, signing: signing, authorization: authorization, ssh: ssh,
            url: url)
    }

    /// How many places this request is fetched from: `fetchURL`, then the mirrors (none for a
    /// local file).
    var locationCount: Int { origin == nil ? 0 : 1 + mirrors.count }

    /// The place at `index` of those (`fetchURL` first).
    func location(at index: Int) -> FetchLocation {
        guard index > 0 else {
            return FetchLocation(
                listed: url, url: fetchURL, origin: origin ?? Origin.of(fetchURL), signing: signing,
                authorization: authorization, credentialUser: credentialUser, ssh: ssh)
        }
        return mirrors[index - 1]
    }

    /// The origin of the place at `index`.
    func origin(ofLocation index: Int) -> Origin {
        index == 0 ? origin ?? Origin.of(fetchURL) : mirrors[index - 1].origin
    }

    /// The request to send to one of `locations`: this one itself when it is `url`.
    func at(_ location: FetchLocation) -> FetchRequest {
        location.url == url && location.origin == origin && location.signing == signing && location.authorization == authorization
            && location.ssh == ssh
            ? self : FetchRequest(self, at: location)
    }

    var isConditional: Bool { etag != nil || lastModified != nil }

    /// An SSH login is a user's own: what it reads is private.
    private static func carriesCredentials(
        headers: [RequestHeader], signing: AWSSigning?, authorization: String?, ssh: SSHLogin?,
        url: String
    ) -> Bool {
        !headers.isEmpty || signing != nil || authorization != nil || ssh != nil || CredentialFreeURL.hasUserInfo(url)
    }

    /// The request as sent to the place at `index` (`location(at:)`): this one for the first
    /// when it is requested as listed.
    func sent(toLocation index: Int) -> (request: FetchRequest, isPrivate: Bool) {
        index == 0 && fetchURL == url && origin != nil ? (self, carriesCredentials) : sent(to: location(at: index))
    }

    /// The request as sent to `location` (`at`), and whether what it delivers was fetched with
    /// credentials: signed, with user info in its URL (as listed or as requested), or with the
    /// manifest's headers (sent only to the manifest URL's own origin). Privacy follows the
    /// bytes' location, not the entry's URL.
    func sent(to location: FetchLocation) -> (request: FetchRequest, isPrivate: Bool) {
        let sent = at(location)
        return (sent, sent.carriesCredentials || (location.listed != sent.url && CredentialFreeURL.hasUserInfo(location.listed)))
    }
}

/// A mirror served because the entry's own URL failed: that URL's origin (the bucket for an
/// `s3://` URL, else scheme, host and port) and its failure.
public struct Failover: Sendable {
    public let origin: Origin
    public let failure: FetchFailure

    /// The failover from `location` (the entry's own), which failed with `failure`.
    init(from location: FetchLocation, _ failure: FetchFailure) {
        origin = Origin.of(location.listed)
        self.failure = failure
    }
}

/// What a successful download delivered.
public enum Delivery: Sendable, Equatable {
    case body(FetchedBody)
    /// 304 to a conditional request: the stored version is current.
    case notModified
}

/// A body that was received completely and matched its hash, waiting in `tmp/` to be installed
/// as an object when its batch commits. A class: a delivery is handed on several times between
/// the engine's thread and the commit, and a copy is then one reference, not its four strings.
public final class FetchedBody: Sendable, Equatable {
    public let temporaryPath: String
    public let sha256: String
    public let size: Int64
    public let etag: String?
    public let lastModified: String?

    public init(temporaryPath: String, sha256: String, size: Int64, etag: String?, lastModified: String?) {
        self.temporaryPath = temporaryPath
        self.sha256 = sha256
        self.size = size
        self.etag = etag
        self.lastModified = lastModified
    }

    public static func == (left: FetchedBody, right: FetchedBody) -> Bool {
        left.temporaryPath == right.temporaryPath && left.sha256 == right.sha256 && left.size == right.size
            && left.etag == right.etag && left.lastModified == right.lastModified
    }
}

/// The outcome of a download with its retries.
public struct FetchResult: Sendable {
    public let result: Result<Delivery, FetchFailure>
    public let attempts: Int
    /// Body bytes received over all attempts.
    public var bytesReceived: Int64
    /// The source that delivered or failed it; nil when none was asked.
    public let source: SourceKind?
    /// A mirror that delivered the body (as the manifest lists it); nil for the entry's URL.
    public var servedBy: String? = nil
    /// The entry's own URL failed and a mirror served instead: what failed there.
    public var failover: Failover?
    /// The body was fetched with credentials (`FetchRequest.sent(to:)`'s `isPrivate` of the
    /// location that delivered it): private, kept off the shared tier.
    public var isPrivate = false
}
