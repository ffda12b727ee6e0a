import Foundation
import Glibc
import WorkerTestSupport

/// moto's S3 server on 127.0.0.1 with its IAM authentication on: a real S3 implementation that
/// checks every request's Signature Version 4 against the keys it issued. The setup (a user with
/// an access key, a role assumed for a session token, the buckets and objects) runs unsigned as
/// moto's first `INITIAL_NO_AUTH_ACTION_COUNT` actions; every request after them must be signed
/// by a key moto knows. scripts/test.sh installs moto in a virtual environment
/// (`WORKER_MOTO_SERVER` names its `moto_server`).
final class MotoS3 {
    struct Keys {
        let id: String
        let secret: String
        var token: String? = nil
    }

    let directory = TemporaryDirectory()
    let port: Int
    private let python: String
    /// The IAM user's access key, and the assumed role's temporary credentials.
    let user: Keys
    let session: Keys
    private let process: ChildProcess
    var endpoint: String { "http://127.0.0.1:\(port)" }
    var log: String { directory.path + "/moto.log" }

    /// Starts moto and puts `objects` (bucket → key → bytes) in it; those whose key is in
    /// `sha256Keys` are put with `ChecksumAlgorithm=SHA256` (the bucket then stores their SHA-256).
    init(objects: [String: [String: [UInt8]]], sha256Keys: Set<String> = []) throws {
        let server =
            ProcessInfo.processInfo.environment["WORKER_MOTO_SERVER"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (ProcessInfo.processInfo.environment["XDG_CACHE_HOME"] ?? (ProcessInfo.processInfo.environment["HOME"] ?? "/root")
                + "/.cache")
            + "/worker-test-venv/bin/moto_server"
        guard FileManager.default.isExecutableFile(atPath: server) else {
            throw TierProblem("moto_server is not installed at \(server) (scripts/test.sh installs it)")
        }
        let python = (server as NSString).deletingLastPathComponent + "/python"
        self.python = python
        var listing: [[String]] = []
        for (bucket, files) in objects.sorted(by: { $0.key < $1.key }) {
            for (key, bytes) in files.sorted(by: { $0.key < $1.key }) {
                listing.append([bucket, key, directory.write("object-\(listing.count)", bytes), sha256Keys.contains(key) ? "SHA256" : ""])
            }
        }
        let listingPath = directory.write(
            "objects.json", String(decoding: try JSONSerialization.data(withJSONObject: listing), as: UTF8.self))
        let script = directory.write("setup.py", Self.setup)
        // The setup's own requests: six for the user, its key and the role, one per bucket and per object.
        let unauthenticated = 6 + objects.count + listing.count
        var lastError = "moto did not start"
        for _ in 0..<3 {
            let port = try NginxServer.freePort()
            var environment = ProcessInfo.processInfo.environment
            environment["INITIAL_NO_AUTH_ACTION_COUNT"] = String(unauthenticated)
            let process = try ChildProcess(
                server, ["-H", "127.0.0.1", "-p", String(port)], environment: environment,
                stdout: .file(directory.path + "/moto.log"), stderr: .file(directory.path + "/moto.log"))
            guard NginxServer.waitForListener(port: port, while: process) else {
                process.terminate()
                process.waitUntilExit()
                lastError = (try? String(contentsOfFile: directory.path + "/moto.log", encoding: .utf8)) ?? lastError
                continue
            }
            let output = directory.path + "/keys.json"
            let setup = try ChildProcess(
                python, [script, String(port), listingPath, output], stdout: .file(directory.path + "/setup.log"),
                stderr: .file(directory.path + "/setup.log"))
            setup.waitUntilExit()
            guard setup.terminationStatus == 0, let data = FileManager.default.contents(atPath: output),
                let keys = try JSONSerialization.jsonObject(with: data) as? [String: String],
                let id = keys["id"], let secret = keys["secret"], let sessionID = keys["session_id"],
                let sessionSecret = keys["session_secret"], let token = keys["session_token"]
            else {
                process.terminate()
                process.waitUntilExit()
                throw TierProblem(
                    "moto's setup failed: " + ((try? String(contentsOfFile: directory.path + "/setup.log", encoding: .utf8)) ?? ""))
            }
            self.port = port
            self.process = process
            user = Keys(id: id, secret: secret)
            session = Keys(id: sessionID, secret: sessionSecret, token: token)
            return
        }
        throw TierProblem(lastError)
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }

    /// Runs `code` (Python) with `s3`, a boto3 client signed with the user's keys.
    func boto(_ code: String) throws {
        let script = directory.write(
            "boto-\(UUID().uuidString).py",
            """
            import boto3
            s3 = boto3.client("s3", endpoint_url="\(endpoint)", region_name="us-east-1",
                              aws_access_key_id="\(user.id)", aws_secret_access_key="\(user.secret)")
            """ + "\n" + code + "\n")
        let run = try ChildProcess(
            python, [script], stdout: .file(directory.path + "/boto.log"), stderr: .file(directory.path + "/boto.log"))
        run.waitUntilExit()
        guard run.terminationStatus == 0 else {
            throw TierProblem("boto3 failed: " + ((try? String(contentsOfFile: directory.path + "/boto.log", encoding: .utf8)) ?? ""))
        }
    }

    /// Puts `bytes` at `key` (with the bucket storing its SHA-256 when `sha256`).
    func put(_ bucket: String, _ key: String, _ bytes: [UInt8], sha256: Bool) throws {
        let file = directory.write("put-\(UUID().uuidString)", bytes)
        try boto(
            "s3.put_object(Bucket=\"\(bucket)\", Key=\"\(key)\", Body=open(\"\(file)\", \"rb\").read()"
                + (sha256 ? ", ChecksumAlgorithm=\"SHA256\")" : ")"))
    }

    func delete(_ bucket: String, _ key: String) throws {
        try boto("s3.delete_object(Bucket=\"\(bucket)\", Key=\"\(key)\")")
    }

    /// Requests moto logged, as "METHOD PATH STATUS".
    var requests: [String] {
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            guard let open = line.firstIndex(of: "\""), let close = line[line.index(after: open)...].firstIndex(of: "\"") else {
                return nil
            }
            let request = line[line.index(after: open)..<close].split(separator: " ")
            let status = line[line.index(after: close)...].split(separator: " ").first ?? ""
            guard request.count >= 2 else { return nil }
            // moto colours some lines: the method may follow an escape sequence.
            let method = request[0].split(separator: "m").last ?? request[0]
            return "\(method) \(request[1]) \(status)"
        }
    }

    /// The environment of a run against this server: its endpoint, `keys` (none: unsigned), and
    /// nothing of the machine's own AWS settings.
    func environment(_ keys: Keys?, home: String, extra: [String: String] = [:]) -> [String: String] {
        Self.environment(endpoint: endpoint, keys, home: home, extra: extra)
    }

    /// The same for any S3 endpoint (a stub on loopback as well as moto).
    static func environment(endpoint: String, _ keys: Keys?, home: String, extra: [String: String] = [:]) -> [String: String] {
        var environment = [
            "HOME": home, "AWS_ENDPOINT_URL": endpoint, "AWS_ENDPOINT_URL_S3": "", "AWS_PROFILE": "",
            "AWS_REGION": "", "AWS_DEFAULT_REGION": "", "AWS_CONFIG_FILE": "", "AWS_SHARED_CREDENTIALS_FILE": "",
            "AWS_ACCESS_KEY_ID": keys?.id ?? "", "AWS_SECRET_ACCESS_KEY": keys?.secret ?? "",
            "AWS_SESSION_TOKEN": keys?.token ?? "",
        ]
        for (name, value) in extra { environment[name] = value }
        return environment
    }

    private static let setup = """
        import json, sys
        import boto3
        port, listing, output = int(sys.argv[1]), sys.argv[2], sys.argv[3]
        settings = dict(endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1",
                        aws_access_key_id="setup", aws_secret_access_key="setup")
        iam = boto3.client("iam", **settings)
        everything = json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]})
        iam.create_user(UserName="worker")
        key = iam.create_access_key(UserName="worker")["AccessKey"]
        iam.put_user_policy(UserName="worker", PolicyName="everything", PolicyDocument=everything)
        trust = json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}]})
        role = iam.create_role(RoleName="reader", AssumeRolePolicyDocument=trust)["Role"]
        iam.put_role_policy(RoleName="reader", PolicyName="everything", PolicyDocument=everything)
        session = boto3.client("sts", **settings).assume_role(RoleArn=role["Arn"], RoleSessionName="ci")["Credentials"]
        s3 = boto3.client("s3", **settings)
        objects = json.load(open(listing))
        for bucket in sorted({row[0] for row in objects}):
            s3.create_bucket(Bucket=bucket)
        for bucket, key_name, path, checksum in objects:
            extra = {"ChecksumAlgorithm": checksum} if checksum else {}
            s3.put_object(Bucket=bucket, Key=key_name, Body=open(path, "rb").read(), **extra)
        json.dump({"id": key["AccessKeyId"], "secret": key["SecretAccessKey"], "session_id": session["AccessKeyId"],
                   "session_secret": session["SecretAccessKey"], "session_token": session["SessionToken"]}, open(output, "w"))
        """
}
