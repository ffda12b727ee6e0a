import Foundation
import Testing
import WorkerTestSupport

/// A registry obeys the rules every other kind obeys, through the binary against Debian's
/// docker-registry: each request of it — the `/v2/` probe, tags and manifests, the token realm,
/// blobs — goes where `--rewrite` sends it and is checked by `--rewrite-strict`; credentials go
/// only to the origin they are for and to a realm on it or over https; a token service cannot
/// put a second request into a header; a loopback registry is asked over https first; and a
/// refusal says for whom, and is not "a later run may succeed".
@Suite(.hangLimit) struct RegistryRulesTests {
    typealias Files = RegistryTests

    static let noCredentials = ["DOCKER_CONFIG": "/nonexistent", "REGISTRY_AUTH_FILE": ""]

    /// `--rewrite oci://REG/=oci://MIRROR/`: a tag is read from MIRROR and REG (which has it too)
    /// is never asked — not its `/v2/`, not the tag — under `--rewrite-strict` too, and by `worker
    /// manifest`.
    @Test func aRewrittenRegistryIsNeverAskedForATag() async throws {
        // REG and MIRROR hold the same artifact; REG logs every request it answers.
        let storage = TemporaryDirectory()
        let mirror = try OCIRegistry(storage: storage.path)
        defer { mirror.stop() }
        try mirror.pushArtifact("team/art", tag: "v1", files: ["a.txt": Array("alpha\n".utf8)])
        let registry = try OCIRegistry(storage: storage.path, logRequests: true)
        defer { registry.stop() }
        let reg = registry.address
        let directory = TemporaryDirectory()
        let manifest = directory.write("m.yaml", "version: 1\nentries:\n  - url: oci://\(reg)/team/art:v1\n    path: tools\n")
        let rule = ["--rewrite", "oci://\(reg)/=oci://\(mirror.address)/", "--retries", "0"]
        let synced = try await WorkerBinary.run(
            [
                "sync", manifest, "--cache-dir", directory.path + "/c", "--tree", directory.path + "/tree",
                "--rewrite-strict",
            ] + rule, environment: Self.noCredentials)
        #expect(synced.code == 0, "\(synced.stderr)")
        #expect(FileManager.default.contents(atPath: directory.path + "/tree/tools/a.txt") == Data("alpha\n".utf8))
        let written = try await WorkerBinary.run(
            [
                "manifest", "oci://\(reg)/team/art:v1", "-o", directory.path + "/pinned.yaml",
                "--rewrite-strict",
            ] + rule, environment: Self.noCredentials)
        #expect(written.code == 0, "\(written.stderr)")
        #expect(
            ((try? String(contentsOfFile: directory.path + "/pinned.yaml", encoding: .utf8)) ?? "").contains(
                "oci://\(reg)/team/art:v1#a.txt"))
        let asked = registry.log.split(separator: "\n").filter { $0.contains("http.request.uri=") || $0.contains("TLS handshake") }
        #expect(asked.isEmpty, "REG was asked: \(asked.prefix(3))")
    }

    /// A token realm on another origin over plain http gets no credentials (refused, naming it;
    /// asked anonymously when there are none), and `--rewrite-strict` refuses a realm no rule
    /// covers before asking it. Each refusal is exit 2: the same settings fail the next run alike.
    @Test func aRealmGetsCredentialsOnlyOnTheRegistrysOriginOrOverHTTPSAndStrictChecksIt() async throws {
        let storage = TemporaryDirectory()
        let open = try OCIRegistry(storage: storage.path)
        defer { open.stop() }
        try open.pushArtifact("team/art", tag: "v1", files: ["a.txt": Array("private\n".utf8)])
        try open.pushArtifact("public/art", tag: "v1", files: ["p.txt": Array("public\n".utf8)])
        let tokens = try RegistryTokenService(users: ["alice": "al1ce-pass"])
        defer { tokens.stop() }
        let registry = try OCIRegistry(storage: storage.path, auth: .token(tokens))
        defer { registry.stop() }
        let directory = TemporaryDirectory()
        let config = Files.dockerConfig(directory, registry: registry.address, user: "alice", password: "al1ce-pass")
        let privateTag = directory.write("private.yaml", "version: 1\nentries:\n  - url: oci://\(registry.address)/team/art:v1\n")
        let elsewhere = try await WorkerBinary.run(
            ["sync", privateTag, "--cache-dir", directory.path + "/c1", "--retries", "0"],
            environment: ["DOCKER_CONFIG": config, "REGISTRY_AUTH_FILE": ""])
        #expect(elsewhere.code == 2, "\(elsewhere.stderr)")
        #expect(
            elsewhere.stderr.contains(
                "the token realm \(tokens.url) is on another origin over plain http: the credentials for alice "
                    + "are not sent to it (refused)"), "\(elsewhere.stderr)")
        #expect(tokens.requests.isEmpty, "\(tokens.requests)")
        #expect(!(elsewhere.stdout + elsewhere.stderr).contains("al1ce-pass"))

        // Without credentials the realm is asked anonymously (a public repository).
        let publicTag = directory.write("public.yaml", "version: 1\nentries:\n  - url: oci://\(registry.address)/public/art:v1\n")
        let anonymous = try await WorkerBinary.run(
            ["sync", publicTag, "--cache-dir", directory.path + "/c2", "--retries", "0"],
            environment: Self.noCredentials)
        #expect(anonymous.code == 0, "\(anonymous.stderr)")
        #expect(!tokens.requests.isEmpty && tokens.requests.allSatisfy { $0.user == nil }, "\(tokens.requests)")

        // Strict: the registry allowed, its realm on another origin not.
        let before = tokens.requests.count
        let strict = try await WorkerBinary.run(
            [
                "sync", publicTag, "--cache-dir", directory.path + "/c3", "--retries", "0", "--rewrite-strict",
                "--allow-origin", "https://\(registry.address)", "--allow-origin", "http://\(registry.address)",
            ],
            environment: Self.noCredentials)
        #expect(strict.code == 2, "\(strict.stderr)")
        #expect(strict.stderr.contains("the token realm \(tokens.url)/token?"), "\(strict.stderr)")
        #expect(
            strict.stderr.contains("which no --rewrite rule covers and no --allow-origin allows, is not asked (--rewrite-strict)"),
            "\(strict.stderr)")
        #expect(tokens.requests.count == before, "the realm was asked: \(tokens.requests)")
    }

    /// An http(s) rule for a registry's API sends its requests elsewhere, and the registry's
    /// Docker-config credentials stay home: the target gets only the credentials its own entry
    /// names. So does an `oci://` rule's.
    @Test func aRewrittenRegistryGetsOnlyItsOwnCredentials() async throws {
        let storage = TemporaryDirectory()
        let open = try OCIRegistry(storage: storage.path)
        defer { open.stop() }
        let bytes = Array("behind basic auth\n".utf8)
        let digest = try await open.push("team/files", bytes)
        try open.pushArtifact("team/art", tag: "v1", files: ["a.txt": bytes])
        let other = try OCIRegistry(storage: storage.path, auth: .htpasswd(user: "alice", password: "al1ce-pass"))
        defer { other.stop() }
        let gone = "127.0.0.1:\(try NginxServer.freePort())"
        let directory = TemporaryDirectory()
        let blob = Files.manifest(directory, ["oci://\(gone)/team/files@sha256:\(digest)"], name: "blob.yaml")
        let tag = directory.write("tag.yaml", "version: 1\nentries:\n  - url: oci://\(gone)/team/art:v1\n")
        let homeOnly = Files.dockerConfig(directory, registry: gone, user: "alice", password: "al1ce-pass")
        // The API's URL, however the registry is asked (https first, http on loopback).
        let api = ["--rewrite", "https://\(gone)/=http://\(other.address)/", "--rewrite", "http://\(gone)/=http://\(other.address)/"]
        for (manifest, rules) in [(blob, api), (tag, ["--rewrite", "oci://\(gone)/=oci://\(other.address)/"])] {
            let rule = rules[1]
            let sent = try await WorkerBinary.run(
                [
                    "sync", manifest, "--cache-dir", directory.path + "/c-\(rule.hasPrefix("oci") ? "o" : "h")",
                    "--retries", "0",
                ] + rules,
                environment: ["DOCKER_CONFIG": homeOnly, "REGISTRY_AUTH_FILE": ""])
            #expect(sent.code != 0, "the target got REG's credentials (\(rule)): \(sent.stdout)")
            #expect(sent.stderr.contains("sent without credentials"), "\(rule): \(sent.stderr)")
        }
        // The target's own entry names it: then it gets those.
        let both = directory.write(
            "both/config.json",
            #"{"auths": {"\#(gone)": {"auth": "\#(Data("alice:al1ce-pass".utf8).base64EncodedString())"}, "#
                + #""\#(other.address)": {"auth": "\#(Data("alice:al1ce-pass".utf8).base64EncodedString())"}}}"#)
        for (manifest, rules) in [(blob, api), (tag, ["--rewrite", "oci://\(gone)/=oci://\(other.address)/"])] {
            let rule = rules[1]
            let named = try await WorkerBinary.run(
                [
                    "sync", manifest, "--cache-dir", directory.path + "/d-\(rule.hasPrefix("oci") ? "o" : "h")",
                    "--retries", "0",
                ] + rules,
                environment: [
                    "DOCKER_CONFIG": (both as NSString).deletingLastPathComponent,
                    "REGISTRY_AUTH_FILE": "",
                ])
            #expect(named.code == 0, "\(rule): \(named.stderr)")
        }
    }

    /// A token is a header's value: one with CR LF inside (a token service that would put a
    /// second request into the registry's connection) is refused, and never sent.
    @Test func aTokenWithAControlCharacterIsRefused() async throws {
        let storage = TemporaryDirectory()
        let open = try OCIRegistry(storage: storage.path)
        defer { open.stop() }
        let digest = try await open.push("public/files", Array("a blob\n".utf8))
        let service = try RawOrigin()
        defer { service.stop() }
        let body = Array(#"{"token": "abc\r\nGET /v2/_catalog HTTP/1.1\r\nHost: x\r\n\r\n", "expires_in": 300}"#.utf8)
        service.script(
            "/token",
            [
                RawOrigin.Answer(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n"
                        + "Connection: close\r\n\r\n", body: body)
            ])
        let signing = TemporaryDirectory()
        let certificate = try TLSTests.makeCertificate(in: signing).certificate
        let registry = try OCIRegistry(
            storage: storage.path, auth: .realm(service.url("/token"), certificate: certificate), logRequests: true)
        defer { registry.stop() }
        let directory = TemporaryDirectory()
        let manifest = Files.manifest(directory, ["oci://\(registry.address)/public/files@sha256:\(digest)"])
        let synced = try await WorkerBinary.run(
            ["sync", manifest, "--cache-dir", directory.path + "/c", "--retries", "0"],
            environment: Self.noCredentials)
        #expect(synced.code == 1, "\(synced.stderr)")
        #expect(synced.stderr.contains("the token service's token holds a control character or a space (refused)"), "\(synced.stderr)")
        #expect(service.hits("/token") == 1)
        #expect(!registry.log.contains("_catalog"), "a second request reached the registry")
    }

    /// `--rewrite-strict` checks a redirect as libcurl will ask for it: `/cdn/../admin/x` is
    /// `/admin/x`, which no rule covers; a path with an encoded dot segment (`%2e%2e`, which a
    /// server may read as `..`) is refused; a listed URL with dot segments is checked the same
    /// way before any request.
    @Test func aStrictRedirectIsCheckedAfterRemovingDotSegments() async throws {
        let origin = try RawOrigin()
        defer { origin.stop() }
        func redirect(_ location: String) -> [RawOrigin.Answer] {
            [RawOrigin.Answer("HTTP/1.1 302 Found\r\nLocation: \(location)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")]
        }
        origin.script("/cdn/dotted", redirect("/cdn/../admin/x"))
        origin.script("/cdn/encoded", redirect("/cdn/%2e%2E/admin/x"))
        origin.script("/cdn/inside", redirect("/cdn/./sub/../y"))
        let secret = Array("admin only\n".utf8)
        let fine = Array("under the rule\n".utf8)
        for (path, bytes) in [("/admin/x", secret), ("/cdn/%2e%2E/admin/x", secret), ("/cdn/y", fine)] {
            origin.script(
                path, [RawOrigin.Answer("HTTP/1.1 200 OK\r\nContent-Length: \(bytes.count)\r\nConnection: close\r\n\r\n", body: bytes)])
        }
        let directory = TemporaryDirectory()
        let from = "http://127.0.0.1:1/cdn/"
        let manifest = directory.write(
            "m.yaml",
            """
            version: 1
            entries:
              - url: \(from)dotted
                hash: sha256:\(sha256(secret))
              - url: \(from)encoded
                hash: sha256:\(sha256(secret))
              - url: \(from)inside
                hash: sha256:\(sha256(fine))

            """)
        let strict = ["--rewrite", "\(from)=\(origin.url("/cdn/"))", "--rewrite-strict", "--retries", "0"]
        let synced = try await WorkerBinary.run(
            ["sync", manifest, "--cache-dir", directory.path + "/c", "--report", directory.path + "/r.json"]
                + strict)
        #expect(synced.code == 1, "\(synced.stderr)")
        let rows = try Files.rows(directory.path + "/r.json")
        #expect(
            (rows["\(from)dotted"]?["error"] as? String)?.contains(
                "a redirect to \(origin.url("/admin/x")), which no --rewrite rule covers")
                == true, "\(rows["\(from)dotted"] ?? [:])")
        #expect((rows["\(from)encoded"]?["error"] as? String)?.contains("encoded dot segment") == true, "\(rows["\(from)encoded"] ?? [:])")
        #expect(rows["\(from)inside"]?["status"] as? String == "added", "\(rows["\(from)inside"] ?? [:])")
        #expect(origin.hits("/admin/x") == 0 && origin.hits("/cdn/%2e%2E/admin/x") == 0, "the server was asked outside the rule")

        let listed = directory.write(
            "listed.yaml", "version: 1\nentries:\n  - url: \(from)../admin/x\n    hash: sha256:\(sha256(secret))\n")
        let refused = try await WorkerBinary.run(["sync", listed, "--cache-dir", directory.path + "/c"] + strict)
        #expect(refused.code == 2, "\(refused.stderr)")
        #expect(refused.stderr.contains("no rule covers"), "\(refused.stderr)")
        #expect(origin.hits("/admin/x") == 0)
    }

    /// A loopback registry that speaks TLS (a port-forward to Harbor, a node-local mirror) is
    /// asked over https first; one that does not is asked over http after; `--plain-http` asks
    /// plain http at once (and so cannot reach the TLS one).
    @Test func aLoopbackRegistryIsAskedOverHTTPSFirst() async throws {
        let storage = TemporaryDirectory()
        let plain = try OCIRegistry(storage: storage.path)
        defer { plain.stop() }
        let digest = try await plain.push("team/files", Array("over tls\n".utf8))
        let keys = TemporaryDirectory()
        let served = try TLSTests.makeCertificate(in: keys)
        let secure = try OCIRegistry(storage: storage.path, tls: served)
        defer { secure.stop() }
        let directory = TemporaryDirectory()
        for (name, registry) in [("secure", secure), ("plain", plain)] {
            let manifest = Files.manifest(directory, ["oci://\(registry.address)/team/files@sha256:\(digest)"], name: name + ".yaml")
            let synced = try await WorkerBinary.run(
                [
                    "sync", manifest, "--cache-dir", directory.path + "/c-" + name, "--retries", "0",
                    "--ca-cert", served.certificate,
                ], environment: Self.noCredentials)
            #expect(synced.code == 0, "\(name): \(synced.stderr)")
            let plainHTTP = try await WorkerBinary.run(
                [
                    "sync", manifest, "--cache-dir", directory.path + "/p-" + name, "--retries", "0",
                    "--plain-http",
                ], environment: Self.noCredentials)
            #expect(plainHTTP.code == (name == "plain" ? 0 : 1), "\(name) --plain-http: \(plainHTTP.stderr)")
        }
    }

    /// Credentials the registry refuses are said so, for whom, and end a tag's run with exit 2
    /// (not 3, "a later run may succeed"); a blob's entry fails naming them (exit 1). A token
    /// service's refusal alike.
    @Test func refusedCredentialsSayForWhomAndAreNotARetry() async throws {
        let storage = TemporaryDirectory()
        let open = try OCIRegistry(storage: storage.path)
        defer { open.stop() }
        let bytes = Array("private\n".utf8)
        let digest = try await open.push("team/files", bytes)
        try open.pushArtifact("team/art", tag: "v1", files: ["a.txt": bytes])
        let basic = try OCIRegistry(storage: storage.path, auth: .htpasswd(user: "alice", password: "right-pass"))
        defer { basic.stop() }
        let tokens = try RegistryTokenService(users: ["alice": "right-pass"], tls: true)
        defer { tokens.stop() }
        let token = try OCIRegistry(storage: storage.path, auth: .token(tokens))
        defer { token.stop() }
        let directory = TemporaryDirectory()
        for (name, registry, who) in [("basic", basic, "the registry"), ("token", token, "the token service")] {
            let config = Files.dockerConfig(directory, registry: registry.address, user: "alice", password: "wrong-pass")
            let environment = ["DOCKER_CONFIG": config, "REGISTRY_AUTH_FILE": ""]
            let trust = ["--ca-cert", try #require(tokens.tlsCertificate), "--retries", "0"]
            let tag = directory.write(name + "-tag.yaml", "version: 1\nentries:\n  - url: oci://\(registry.address)/team/art:v1\n")
            let refused = try await WorkerBinary.run(
                ["sync", tag, "--cache-dir", directory.path + "/c-" + name] + trust, environment: environment)
            #expect(refused.code == 2, "\(name): \(refused.stderr)")
            #expect(refused.stderr.contains("\(who) refused the credentials for alice (HTTP 401)"), "\(name): \(refused.stderr)")
            if name == "basic" {
                let blob = Files.manifest(directory, ["oci://\(registry.address)/team/files@sha256:\(digest)"], name: name + "-blob.yaml")
                let failed = try await WorkerBinary.run(
                    ["sync", blob, "--cache-dir", directory.path + "/b-" + name] + trust, environment: environment)
                #expect(failed.code == 1, "\(failed.stderr)")
                #expect(failed.stderr.contains("HTTP 401 (the registry refused the credentials for alice)"), "\(failed.stderr)")
            }
            #expect(!(refused.stdout + refused.stderr).contains("wrong-pass"))
        }
    }

    /// A pull-through mirror (distribution's `proxy: remoteurl`) in front of a registry: with
    /// `--rewrite oci://REG/=oci://MIRROR/` a tag's files come through the mirror, cold and warm,
    /// and REG hears only from the mirror.
    @Test func aPullThroughMirrorServesATagAndTheRegistryHearsOnlyFromIt() async throws {
        let registry = try OCIRegistry(storage: TemporaryDirectory().path, logRequests: true)
        defer { registry.stop() }
        try registry.pushArtifact("team/art", tag: "v1", files: ["a.txt": Array("alpha\n".utf8), "b.txt": Array("beta\n".utf8)])
        let mirror = try OCIRegistry(storage: TemporaryDirectory().path, proxy: "http://\(registry.address)")
        defer { mirror.stop() }
        let directory = TemporaryDirectory()
        let manifest = directory.write("m.yaml", "version: 1\nentries:\n  - url: oci://\(registry.address)/team/art:v1\n")
        let arguments = [
            "sync", manifest, "--cache-dir", directory.path + "/c", "--tree", directory.path + "/tree", "--retries", "0",
            "--rewrite", "oci://\(registry.address)/=oci://\(mirror.address)/", "--rewrite-strict",
        ]
        let cold = try await WorkerBinary.run(arguments, environment: Self.noCredentials)
        #expect(cold.code == 0, "\(cold.stderr)")
        #expect(cold.stdout.contains("added 2"), "\(cold.stdout)")
        let warm = try await WorkerBinary.run(arguments, environment: Self.noCredentials)
        #expect(warm.code == 0 && warm.stdout.contains("unchanged 2"), "\(warm.stdout) \(warm.stderr)")
        #expect(FileManager.default.contents(atPath: directory.path + "/tree/b.txt") == Data("beta\n".utf8))
        let agents = registry.log.split(separator: "\n").compactMap { line in
            line.range(of: "http.request.useragent=").map { line[$0.upperBound...].prefix { $0 != " " } }
        }
        #expect(!agents.isEmpty, "the registry logged its requests: \(registry.log.suffix(500))")
        #expect(!agents.contains { $0.lowercased().contains("worker") }, "worker asked the registry itself: \(Set(agents))")
    }
}
