import WorkerFetch
import WorkerManifest
import WorkerStore

/// How `s3://` URLs are reached: the endpoint (AWS itself, virtual-hosted style; or a custom one,
/// path-style), the region, and the credentials requests are signed with (none: unsigned).
public struct S3Access: Sendable, Equatable {
    public var region: String
    /// A custom endpoint (MinIO, Ceph, R2, GCS): `ENDPOINT/BUCKET/KEY`.
    public var endpoint: String?
    public var credentials: AWSCredentials?
    /// Where the credentials came from, for messages ("the environment", "profile 'ci' in …").
    var credentialSource: String

    public init(
        region: String = "us-east-1", endpoint: String? = nil, credentials: AWSCredentials? = nil,
        credentialSource: String = "none: requests are unsigned"
    ) {
        self.region = region
        self.endpoint = endpoint
        self.credentials = credentials
        self.credentialSource = credentialSource
    }

    /// The https URL of an object, and the signing its requests carry.
    func location(of object: S3URL) -> (url: String, signing: AWSSigning?) {
        let url: String
        if let endpoint {
            url = (endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint) + "/" + object.bucket + "/" + object.encodedKey
        } else if object.bucket.contains(".") {
            // A dotted bucket name breaks the wildcard certificate of the virtual host: path-style.
            url = "https://s3.\(region).amazonaws.com/\(object.bucket)/\(object.encodedKey)"
        } else {
            url = "https://\(object.bucket).s3.\(region).amazonaws.com/\(object.encodedKey)"
        }
        return (url, credentials.map { AWSSigning(credentials: $0, region: region) })
    }
}

extension S3Access: KindAccess {
    public var kind: any URLKind { S3Kind() }

    /// The AWS settings chain (`AWSConfig`): the environment, then the config and credentials files.
    public func configured(environment: [String: String]) throws(KindSettingsProblem) -> any KindAccess {
        switch Self.resolve(environment: environment) {
        case .success(let access): return access
        case .failure(let error): throw KindSettingsProblem(error.description)
        }
    }

    /// An `s3://` FROM sends the key to another bucket (signed) or to an http(s) URL (unsigned);
    /// the endpoint's URL then goes where an http(s) rule sends it (a proxy).
    public func location(
        _ listed: String, rewrite: URLRewrite, origin: Origin?, expected: ContentHash?,
        memo: inout OriginMemo
    ) -> FetchLocation {
        let target = rewrite.apply(listed)
        guard case .success(let object) = S3URL.parse(target) else {
            return FetchLocation(listed: listed, url: target, origin: origin ?? memo.origin(of: target))
        }
        let (endpoint, signing) = location(of: object)
        let url = rewrite.apply(endpoint)
        return FetchLocation(listed: listed, url: url, origin: origin ?? memo.origin(of: url), signing: signing)
    }

    /// The endpoint's URL of the object.
    public func beforeRewrite(_ listed: String) -> [String] {
        guard case .success(let object) = S3URL.parse(listed) else { return [listed] }
        return [location(of: object).url]
    }

    public func lister(store: ContentStore, settings: FetchSettings, width: Int) throws(EngineStartFailure) -> (any FolderLister)? {
        try BucketReader(access: self, store: store, settings: settings, width: width)
    }
}
