import Foundation
import Testing
import WorkerTestSupport

/// An https origin with a certificate made for the test (openssl), trusted through `--ca-cert`.
@Suite(.hangLimit) struct TLSTests {
    /// A self-signed certificate for 127.0.0.1 and its key, as PEM files in `directory`.
    static func makeCertificate(in directory: TemporaryDirectory) throws -> (certificate: String, key: String) {
        let certificate = directory.path + "/origin.pem"
        let key = directory.path + "/origin.key"
        let openssl = try ChildProcess(
            "/usr/bin/env",
            [
                "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                "-keyout", key, "-out", certificate,
            ])
        openssl.waitUntilExit()
        try #require(openssl.terminationStatus == 0, "openssl could not make a test certificate")
        return (certificate, key)
    }

    @Test func httpsIsTrustedThroughCACertAndHTTPSToHTTPRedirectIsRefused() async throws {
        let directory = TemporaryDirectory()
        let plain = try await Harness.start()
        defer { Task { await plain.origin.stop() } }
        let bytes = Array("over tls\n".utf8)
        let downgraded = plain.serve("plain")
        // nginx over TLS; its /goto redirects to the plain origin's http URL.
        let (secure, certificate) = try NginxServer.https(
            ["f/secure": bytes], in: directory,
            extra: "location = /goto { return 302 \(plain.origin.url("/f/plain")); }")
        defer { secure.stop() }
        let files = (certificate: certificate, key: "")
        let manifest = directory.write(
            "tls.yaml",
            """
            version: 1
            entries:
              - url: \(secure.url("/f/secure"))
                hash: sha256:\(sha256(bytes))
              - url: \(secure.url("/goto"))
                hash: sha256:\(sha256(downgraded))
            """)
        let cache = directory.path + "/cache"
        let report = directory.path + "/r.json"

        let untrusted = try await WorkerBinary.run(["sync", manifest, "--cache-dir", cache])
        #expect(untrusted.code == 1)
        #expect(
            untrusted.stderr.contains(
                "\(secure.url("/f/secure")): connection: TLS: the server's certificate is not trusted (a private CA can be added with --ca-cert)"
            ))
        #expect(!untrusted.stderr.contains("attempts)"), "a certificate that is not trusted is not retried")

        let result = try await WorkerBinary.run([
            "sync", manifest, "--cache-dir", cache, "--ca-cert", files.certificate,
            "--report", report, "--retries", "0",
        ])
        #expect(result.code == 1)
        let json = try #require(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])
        let entries = try #require(json["entries"] as? [[String: Any]])
        #expect(entries.first { $0["url"] as? String == secure.url("/f/secure") }?["status"] as? String == "added")
        let refused = try #require(entries.first { $0["status"] as? String == "failed" })
        #expect(refused["reason"] as? String == "redirect")
        #expect(refused["error"] as? String == "redirect from https to http refused")
        #expect(plain.origin.hits("/f/plain") == 0, "the http URL was never requested")
    }

    @Test func everyCACertFileIsTrustedAndTheBundleMadeForTheRunIsRemoved() async throws {
        let directory = TemporaryDirectory()
        let other = TemporaryDirectory()
        let unrelated = try Self.makeCertificate(in: other)
        let bytes = Array("two authorities\n".utf8)
        let (secure, certificate) = try NginxServer.https(["f/secure": bytes], in: directory)
        defer { secure.stop() }
        let files = (certificate: certificate, key: "")
        let manifest = directory.write(
            "tls.yaml",
            """
            version: 1
            entries:
              - url: \(secure.url("/f/secure"))
                hash: sha256:\(sha256(bytes))
            """)
        let temporary = directory.path + "/tmp"
        try FileManager.default.createDirectory(atPath: temporary, withIntermediateDirectories: true)

        let wrong = try await WorkerBinary.run(
            ["sync", manifest, "--cache-dir", directory.path + "/c1", "--ca-cert", unrelated.certificate],
            environment: ["TMPDIR": temporary])
        #expect(wrong.code == 1 && wrong.stderr.contains("certificate is not trusted"), "\(wrong.stderr)")

        // Two files make one bundle for libcurl: the origin's authority is found in the second.
        let both = try await WorkerBinary.run(
            [
                "sync", manifest, "--cache-dir", directory.path + "/c2",
                "--ca-cert", unrelated.certificate, "--ca-cert", files.certificate,
            ],
            environment: ["TMPDIR": temporary])
        #expect(both.code == 0, "\(both.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: temporary).isEmpty, "the run's bundle is removed")
    }
}
