import Foundation
import Glibc
import WorkerTestSupport

/// Debian's `docker-registry` (distribution 2.8) on a free port of 127.0.0.1: anonymous, behind
/// htpasswd (Basic), or behind a token service (`RegistryTokenService`); registries made with one
/// `storage` folder serve the same blobs. Blobs are pushed through an anonymous one with the
/// distribution API (a monolithic upload, as `oras` and `skopeo` make for small blobs).
/// scripts/test.sh installs docker-registry.
final class OCIRegistry {
    enum Auth {
        case none
        case htpasswd(user: String, password: String)
        case token(RegistryTokenService)
        /// Behind a token service at `realm` whose tokens are signed with `certificate`'s key (a
        /// service that misbehaves: none its tokens pass).
        case realm(String, certificate: String)
    }

    let directory = TemporaryDirectory()
    let port: Int
    private let process: ChildProcess
    var address: String { "127.0.0.1:\(port)" }
    /// What the registry logged: with `logRequests`, a line per request (its user agent too).
    var log: String { (try? String(contentsOfFile: directory.path + "/registry.log", encoding: .utf8)) ?? "" }

    /// `tls`: a certificate and key it speaks TLS with (else plain http); `proxy`: the registry
    /// it is a pull-through mirror of (distribution's `proxy: remoteurl`).
    init(
        storage: String, auth: Auth = .none, tls: (certificate: String, key: String)? = nil, proxy: String? = nil,
        logRequests: Bool = false
    ) throws {
        let binary = ["/usr/bin/docker-registry", "/usr/local/bin/docker-registry"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
        guard let binary else { throw TierProblem("docker-registry is not installed (scripts/test.sh installs it)") }
        var authBlock = ""
        switch auth {
        case .none: break
        case .htpasswd(let user, let password):
            let htpasswd = try ChildProcess("/usr/bin/env", ["htpasswd", "-Bbc", directory.path + "/htpasswd", user, password])
            htpasswd.waitUntilExit()
            guard htpasswd.terminationStatus == 0 else { throw TierProblem("htpasswd failed") }
            authBlock = "auth:\n  htpasswd:\n    realm: worker-test\n    path: \(directory.path)/htpasswd\n"
        case .token(let service):
            authBlock =
                "auth:\n  token:\n    realm: \(service.url)/token\n    service: worker-test-registry\n"
                + "    issuer: worker-test-issuer\n    rootcertbundle: \(service.certificate)\n"
        case .realm(let realm, let certificate):
            authBlock =
                "auth:\n  token:\n    realm: \(realm)\n    service: worker-test-registry\n"
                + "    issuer: worker-test-issuer\n    rootcertbundle: \(certificate)\n"
        }
        let (folder, log) = (directory, directory.path + "/registry.log")
        let tlsBlock = tls.map { "  tls:\n    certificate: \($0.certificate)\n    key: \($0.key)\n" } ?? ""
        let proxyBlock = proxy.map { "proxy:\n  remoteurl: \($0)\n" } ?? ""
        (port, process) = try startOnFreePort(log: log, what: "docker-registry") { port in
            let config = folder.write(
                "config.yml",
                """
                version: 0.1
                log:
                  level: \(logRequests ? "info" : "warn")
                storage:
                  filesystem:
                    rootdirectory: \(storage)
                http:
                  addr: 127.0.0.1:\(port)
                \(tlsBlock)\(authBlock)\(proxyBlock)
                """)
            return try ChildProcess(binary, ["serve", config], stdout: .file(log), stderr: .file(log))
        }
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }

    /// Pushes `bytes` as a blob of `repository` (this registry must take anonymous pushes); its
    /// digest's hex.
    @discardableResult
    func push(_ repository: String, _ bytes: [UInt8]) async throws -> String {
        let digest = sha256(bytes)
        let file = directory.write("blob-\(digest)", bytes)
        let start = try await WorkerBinary.run(
            ["-s", "-i", "-X", "POST", "http://\(address)/v2/\(repository)/blobs/uploads/"],
            executable: "/usr/bin/curl")
        guard let line = start.stdout.split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix("location:") }) else {
            throw TierProblem("the registry started no upload: \(start.stdout)")
        }
        var location = String(line.dropFirst("location:".count)).trimmingCharacters(in: .whitespaces)
        if location.hasPrefix("/") { location = "http://\(address)" + location }
        let put = try await WorkerBinary.run(
            [
                "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PUT", "--data-binary", "@" + file,
                "-H", "Content-Type: application/octet-stream",
                location + (location.contains("?") ? "&" : "?") + "digest=sha256:" + digest,
            ],
            executable: "/usr/bin/curl")
        guard put.stdout == "201" else { throw TierProblem("the blob upload answered \(put.stdout)") }
        return digest
    }
}

extension OCIRegistry {
    /// Puts `json` as the manifest `repository:reference` of `mediaType` (this registry must take
    /// anonymous pushes).
    func putManifest(_ repository: String, _ reference: String, _ json: String, mediaType: String) async throws {
        let file = directory.write("manifest-\(reference).json", json)
        let put = try await WorkerBinary.run(
            [
                "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PUT", "--data-binary", "@" + file,
                "-H", "Content-Type: " + mediaType, "http://\(address)/v2/\(repository)/manifests/\(reference)",
            ],
            executable: "/usr/bin/curl")
        guard put.stdout == "201" else { throw TierProblem("the manifest upload answered \(put.stdout)") }
    }

    /// Pushes `files` (name → bytes) as an artifact `repository:tag` with ORAS's Python client,
    /// as `oras push` does: a layer per file titled with its name (this registry must take
    /// anonymous pushes).
    func pushArtifact(_ repository: String, tag: String, files: [String: [UInt8]]) throws {
        let folder = TemporaryDirectory()
        for (name, bytes) in files { _ = folder.write(name, bytes) }
        let script = folder.write(
            "push.py",
            """
            import sys
            import oras.client
            client = oras.client.OrasClient(hostname=sys.argv[1], insecure=True)
            answer = client.push(target=sys.argv[2], files=sys.argv[3:])
            sys.exit(0 if answer.status_code in (200, 201) else 1)
            """)
        let process = try ChildProcess(
            RegistryTokenService.python(),
            [script, address, "\(address)/\(repository):\(tag)"]
                + files.keys.sorted(), directory: folder.path,
            stdout: .file(folder.path + "/push.log"), stderr: .file(folder.path + "/push.log"))
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TierProblem("oras push failed: " + ((try? String(contentsOfFile: folder.path + "/push.log", encoding: .utf8)) ?? ""))
        }
    }
}

/// `Tests/tools/registry-token.py` on a free port: a token service for `OCIRegistry`'s token
/// authentication, with a key and a self-signed certificate made for the test; `users` may pull
/// every repository, anonymous callers those under `public/`. `requests` lists what it answered.
final class RegistryTokenService {
    let directory = TemporaryDirectory()
    let port: Int
    let certificate: String
    /// With `tls`: the certificate it speaks TLS with (a client trusts it with `--ca-cert`).
    let tlsCertificate: String?
    private let process: ChildProcess
    var url: String { (tlsCertificate == nil ? "http" : "https") + "://127.0.0.1:\(port)" }

    /// Each answered request: the user (nil: anonymous) and the scope asked.
    var requests: [(user: String?, scope: String)] {
        let text = (try? String(contentsOfFile: directory.path + "/tokens.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            return (object["user"] as? String, object["scope"] as? String ?? "")
        }
    }

    /// The test virtual environment's Python (moto's, with `cryptography` and ORAS's client).
    static func python() throws -> String {
        let server =
            ProcessInfo.processInfo.environment["WORKER_MOTO_SERVER"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (ProcessInfo.processInfo.environment["XDG_CACHE_HOME"] ?? (ProcessInfo.processInfo.environment["HOME"] ?? "/root")
                + "/.cache")
            + "/worker-test-venv/bin/moto_server"
        let python = (server as NSString).deletingLastPathComponent + "/python"
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw TierProblem("the test virtual environment is not installed at \(python) (scripts/test.sh installs it)")
        }
        return python
    }

    /// `tls`: the realm is https (a certificate for 127.0.0.1 made for the test), not plain http.
    init(users: [String: String], lifetime: Int = 300, tls: Bool = false) throws {
        let python = try Self.python()
        let served = tls ? try TLSTests.makeCertificate(in: directory) : nil
        tlsCertificate = served?.certificate
        certificate = directory.path + "/token.pem"
        let key = directory.path + "/token.key"
        let openssl = try ChildProcess(
            "/usr/bin/env",
            [
                "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                "-subj", "/CN=worker-test-issuer", "-keyout", key, "-out", certificate,
            ])
        openssl.waitUntilExit()
        guard openssl.terminationStatus == 0 else { throw TierProblem("openssl could not make the token service's key") }
        let usersFile = directory.write("users.json", String(decoding: try JSONSerialization.data(withJSONObject: users), as: UTF8.self))
        let script = ActionTests.repository + "/Tests/tools/registry-token.py"
        let (log, tokensLog, certificate) = (directory.path + "/service.log", directory.path + "/tokens.log", certificate)
        (port, process) = try startOnFreePort(log: log, what: "the token service") { port in
            try ChildProcess(
                python,
                [script, key, certificate, String(port), usersFile, tokensLog, String(lifetime)]
                    + (served.map { [$0.certificate, $0.key] } ?? []), stdout: .file(log), stderr: .file(log))
        }
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}

/// A server `start` starts on a free port of 127.0.0.1 and its process, once it listens (three
/// tries: another test may take the port first); else what its `log` says.
private func startOnFreePort(log: String, what: String, _ start: (Int) throws -> ChildProcess) throws -> (Int, ChildProcess) {
    var lastError = "\(what) did not start"
    for _ in 0..<3 {
        let port = try NginxServer.freePort()
        let process = try start(port)
        if NginxServer.waitForListener(port: port, while: process) { return (port, process) }
        process.terminate()
        process.waitUntilExit()
        lastError = (try? String(contentsOfFile: log, encoding: .utf8)) ?? lastError
    }
    throw TierProblem(lastError)
}

/// The registry tests' files: manifests, a Docker config, a report's rows by URL.
extension RegistryTests {
    static func manifest(_ directory: TemporaryDirectory, _ urls: [String], name: String = "m.yaml") -> String {
        directory.write(name, "version: 1\nentries:\n" + urls.map { "  - url: \($0)\n" }.joined())
    }

    /// A Docker config folder whose `auths` give `user:password` for `registry`.
    static func dockerConfig(_ directory: TemporaryDirectory, registry: String, user: String, password: String) -> String {
        let auth = Data("\(user):\(password)".utf8).base64EncodedString()
        _ = directory.write("docker/config.json", #"{"auths": {"\#(registry)": {"auth": "\#(auth)"}}}"#)
        return directory.path + "/docker"
    }

    static func rows(_ report: String) throws -> [String: [String: Any]] {
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any]
        let entries = object?["entries"] as? [[String: Any]] ?? []
        return Dictionary(entries.compactMap { row in (row["url"] as? String).map { ($0, row) } }, uniquingKeysWith: { first, _ in first })
    }
}
