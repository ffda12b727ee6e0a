// How a request is signed, as the transport signs it: AWS Signature Version 4 (libcurl's
// `CURLOPT_AWS_SIGV4`), with the key pair it is made with. A kind (s3://) makes the values.

/// An access key pair, with the session token of temporary credentials. Never printed: its
/// description shows the key id only.
public struct AWSCredentials: Sendable, Equatable, CustomStringConvertible {
    public let accessKeyID: String
    let secret: String
    let sessionToken: String?

    public init(accessKeyID: String, secret: String, sessionToken: String? = nil) {
        self.accessKeyID = accessKeyID
        self.secret = secret
        self.sessionToken = sessionToken
    }

    public var description: String { "access key \(accessKeyID)" }
}

/// What one request is signed with (libcurl's AWS Signature Version 4, service `s3`). A class:
/// every request and location of a run's bucket shares the one value (copies are references).
public final class AWSSigning: Sendable, Equatable, CustomStringConvertible {
    public let credentials: AWSCredentials
    public let region: String

    public init(credentials: AWSCredentials, region: String) {
        self.credentials = credentials
        self.region = region
    }

    public static func == (left: AWSSigning, right: AWSSigning) -> Bool {
        left === right || (left.credentials == right.credentials && left.region == right.region)
    }

    /// `CURLOPT_AWS_SIGV4`'s value.
    public var provider: String { "aws:amz:\(region):s3" }
    /// `CURLOPT_USERPWD`'s value: the key id and the secret.
    public var userPassword: String { credentials.accessKeyID + ":" + credentials.secret }
    public var sessionToken: String? { credentials.sessionToken }

    /// The headers a signed request without a body carries: S3 wants the payload's hash (a GET or
    /// a HEAD has none to send), and temporary credentials their session token.
    public var headers: [String] {
        ["x-amz-content-sha256: UNSIGNED-PAYLOAD"] + (sessionToken.map { ["x-amz-security-token: " + $0] } ?? [])
    }

    /// What a refusal names: the key id and the region, never the secret.
    public var description: String { "access key \(credentials.accessKeyID), region \(region)" }
}
