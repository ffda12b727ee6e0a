import Foundation
import Testing
import WorkerTestSupport

@testable import WorkerFetch
@testable import WorkerKinds
@testable import WorkerManifest

/// `s3://` URLs, where they are requested, and the AWS settings chain, as values (the files are
/// real files in a temporary folder; no network).
@Suite(.hangLimit) struct S3PartsTests {
    init() { Kinds.install() }

    @Test func bucketsS3WouldRefuseAndKeysAreNamed() {
        #expect((try? S3URL.parse("s3://assets/a/b.png").get()) == S3URL(bucket: "assets", key: "a/b.png"))
        #expect(S3URL.isS3("s3://a") && S3URL.isS3("S3://a") && S3URL.isS3("s3://"))
        #expect(!S3URL.isS3("s3:/") && !S3URL.isS3("s3") && !S3URL.isS3("https://a") && !S3URL.isS3("ss3://a") && !S3URL.isS3("s3:\\a"))
        for (url, words) in [
            ("s3://", "needs a bucket"), ("s3://assets", "no key"), ("s3://assets/", "no key"),
            ("s3://ab/k", "3 to 63"), ("s3://Assets/k", "lowercase"), ("s3://-assets/k", "begin and end"),
            ("s3://a..b/k", "two periods"), ("s3://10.0.0.1/k", "IP address"), ("s3://xn--abc/k", "reserves"),
        ] {
            guard case .failure(let problem) = S3URL.parse(url) else { Issue.record("\(url) parsed"); continue }
            #expect(problem.description.contains(words), "\(url): \(problem)")
        }
    }

    @Test func objectsAreRequestedVirtualHostedOnAWSAndPathStyleElsewhere() {
        let object = S3URL(bucket: "assets", key: "a b/ü+c.png")
        var access = S3Access(region: "eu-west-3")
        #expect(access.location(of: object).url == "https://assets.s3.eu-west-3.amazonaws.com/a%20b/%C3%BC%2Bc.png")
        #expect(access.location(of: S3URL(bucket: "my.assets", key: "k")).url == "https://s3.eu-west-3.amazonaws.com/my.assets/k")
        #expect(access.location(of: object).signing == nil, "no credentials: unsigned")
        access.endpoint = "http://127.0.0.1:9000/"
        access.credentials = AWSCredentials(accessKeyID: "AKID", secret: "s3cr3t", sessionToken: "tok")
        let location = access.location(of: object)
        #expect(location.url == "http://127.0.0.1:9000/assets/a%20b/%C3%BC%2Bc.png")
        #expect(location.signing?.provider == "aws:amz:eu-west-3:s3")
        #expect(location.signing?.userPassword == "AKID:s3cr3t")
        #expect(!"\(location.signing!)".contains("s3cr3t") && !"\(access.credentials!)".contains("s3cr3t"))
    }

    @Test func theEnvironmentComesFirstThenTheProfileThenUnsigned() throws {
        let directory = TemporaryDirectory()
        let credentials = directory.write(
            "credentials",
            """
            # comment
            [default]
            aws_access_key_id = DEFAULTID
            aws_secret_access_key = defaultsecret
            [ci]
            aws_access_key_id=CIID
            aws_secret_access_key=cisecret
            aws_session_token = citoken
            s3 =
              max_concurrent_requests = 20

            """)
        let config = directory.write("config", "[default]\nregion = us-west-1\n[profile ci]\nregion = ap-south-1\n")
        let files = ["HOME": directory.path, "AWS_SHARED_CREDENTIALS_FILE": credentials, "AWS_CONFIG_FILE": config]

        let fromEnvironment = try AWSConfig.access(
            environment: files.merging(
                ["AWS_ACCESS_KEY_ID": "ENVID", "AWS_SECRET_ACCESS_KEY": "envsecret", "AWS_REGION": "eu-north-1"]) { $1 }
        ).get()
        #expect(fromEnvironment.credentials == AWSCredentials(accessKeyID: "ENVID", secret: "envsecret"))
        #expect(fromEnvironment.region == "eu-north-1")

        let profile = try AWSConfig.access(environment: files.merging(["AWS_PROFILE": "ci"]) { $1 }).get()
        #expect(profile.credentials == AWSCredentials(accessKeyID: "CIID", secret: "cisecret", sessionToken: "citoken"))
        #expect(profile.region == "ap-south-1")
        let fallback = try AWSConfig.access(environment: files.merging(["AWS_PROFILE": "ci", "AWS_DEFAULT_REGION": "sa-east-1"]) { $1 })
            .get()
        #expect(fallback.region == "sa-east-1", "AWS_DEFAULT_REGION before the profile's region")

        let standard = try AWSConfig.access(environment: files).get()
        #expect(standard.credentials?.accessKeyID == "DEFAULTID" && standard.region == "us-west-1")

        let none = try AWSConfig.access(environment: ["HOME": directory.path + "/nowhere"]).get()
        #expect(none.credentials == nil && none.region == "us-east-1" && none.endpoint == nil)

        for (environment, words) in [
            (files.merging(["AWS_PROFILE": "gone"]) { $1 }, "'gone'"),
            (["HOME": "/", "AWS_ACCESS_KEY_ID": "x"], "without AWS_SECRET_ACCESS_KEY"),
            (["HOME": "/", "AWS_SHARED_CREDENTIALS_FILE": directory.path], "not a regular file"),
            (["HOME": "/", "AWS_CONFIG_FILE": directory.path + "/missing"], "missing"),
            (["HOME": "/", "AWS_ENDPOINT_URL": "ftp://127.0.0.1/"], "endpoint"),
        ] {
            guard case .failure(let error) = AWSConfig.access(environment: environment) else {
                Issue.record("\(environment) resolved")
                continue
            }
            #expect(error.description.contains(words), "\(error)")
        }
    }
}
