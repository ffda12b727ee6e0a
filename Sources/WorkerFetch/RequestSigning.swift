// How a request is signed, as the transport signs it: AWS Signature Version 4 (libcurl's
// `CURLOPT_AWS_SIGV4`), with the key pair it is made with. A kind (s3://) makes the values.

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
