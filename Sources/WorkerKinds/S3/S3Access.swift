import WorkerManifest

/// How `s3://` URLs are reached: the endpoint (AWS itself, virtual-hosted style; or a custom one,
/// path-style), the region, and the credentials requests are signed with (none: unsigned).
package struct S3Access: Sendable, Equatable {
    package var region: String
    /// A custom endpoint (MinIO, Ceph, R2, GCS): `ENDPOINT/BUCKET/KEY`.
    package var endpoint: String?
    package var credentials: AWSCredentials?
    /// Where the credentials came from, for messages ("the environment", "profile 'ci' in …").
    package var credentialSource: String

    package init(region: String = "us-east-1", endpoint: String? = nil, credentials: AWSCredentials? = nil,
                credentialSource: String = "none: requests are unsigned") {
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

/// An access key pair, with the session token of temporary credentials. Never printed: its
/// description shows the key id only.
package struct AWSCredentials: Sendable, Equatable, CustomStringConvertible {
    package let accessKeyID: String
    let secret: String
    let sessionToken: String?

    package init(accessKeyID: String, secret: String, sessionToken: String? = nil) {
        self.accessKeyID = accessKeyID
        self.secret = secret
        self.sessionToken = sessionToken
    }

    package var description: String { "access key \(accessKeyID)" }
}

/// What one request is signed with (libcurl's AWS Signature Version 4, service `s3`). A class:
/// every request and location of a run's bucket shares the one value (copies are references).
package final class AWSSigning: Sendable, Equatable, CustomStringConvertible {
    package let credentials: AWSCredentials
    package let region: String

    package init(credentials: AWSCredentials, region: String) {
        self.credentials = credentials
        self.region = region
    }

    package static func == (left: AWSSigning, right: AWSSigning) -> Bool {
        left === right || (left.credentials == right.credentials && left.region == right.region)
    }

    /// `CURLOPT_AWS_SIGV4`'s value.
    package var provider: String { "aws:amz:\(region):s3" }
    /// `CURLOPT_USERPWD`'s value: the key id and the secret.
    package var userPassword: String { credentials.accessKeyID + ":" + credentials.secret }
    package var sessionToken: String? { credentials.sessionToken }

    /// The headers a signed request without a body carries: S3 wants the payload's hash (a GET or
    /// a HEAD has none to send), and temporary credentials their session token.
    package var headers: [String] {
        ["x-amz-content-sha256: UNSIGNED-PAYLOAD"] + (sessionToken.map { ["x-amz-security-token: " + $0] } ?? [])
    }

    /// What a refusal names: the key id and the region, never the secret.
    package var description: String { "access key \(credentials.accessKeyID), region \(region)" }
}
