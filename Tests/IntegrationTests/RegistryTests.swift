import Foundation
import Testing
import WorkerTestSupport

/// `oci://REGISTRY/REPOSITORY@sha256:DIGEST` entries against Debian's docker-registry
/// (distribution 2.8): anonymous, behind htpasswd, and behind a token service — blobs fetched,
/// pinned by their digest, authorized as the registry asks, and a registry's redirect to its
/// storage followed without its token.
@Suite(.hangLimit) struct RegistryTests {
    /// The digest pins the entry (no `hash:`); `get`, `path` and `verify --repair` work on the
    /// blob; a `hash:` that is not the digest, and a tag, are located manifest errors.
    @Test func aBlobOfAnAnonymousRegistryIsAnEntryPinnedByItsDigest() async throws {
        let storage = TemporaryDirectory()
        let registry = try OCIRegistry(storage: storage.path)
        defer { registry.stop() }
        let bytes = Array("a blob pushed to the registry\n".utf8)
        let digest = try await registry.push("team/files", bytes)
        let directory = TemporaryDirectory()
        let url = "oci://\(registry.address)/team/files@sha256:\(digest)"
        let manifest = Self.manifest(directory, [url])
        let cache = directory.path + "/c"
        let synced = try await WorkerBinary.run(["sync", manifest, "--cache-dir", cache, "--report", directory.path + "/r.json"])
        #expect(synced.code == 0, "\(synced.stderr)")
        let report =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory.path + "/r.json"))) as? [String: Any]
        let entries = report?["entries"] as? [[String: Any]] ?? []
        #expect(entries.first?["status"] as? String == "added" && entries.first?["hash"] as? String == "sha256:\(digest)", "\(entries)")
        let got = try await WorkerBinary.run(["get", url, "--cache-dir", cache, "-o", "-"])
        #expect(got.code == 0 && got.stdout == String(decoding: bytes, as: UTF8.self), "\(got.stderr)")
        let path = try await WorkerBinary.run(["path", url, "--cache-dir", cache])
        #expect(path.code == 0 && path.stdout.hasSuffix("/\(digest)\n"), "\(path.stdout)")
        try FileManager.default.removeItem(atPath: String(path.stdout.dropLast()))
        let repaired = try await WorkerBinary.run(["verify", manifest, "--repair", "--cache-dir", cache])
        #expect(repaired.code == 0, "\(repaired.stdout)\(repaired.stderr)")
        #expect(FileManager.default.contents(atPath: String(path.stdout.dropLast())) == Data(bytes))
        let wrong = directory.write(
            "wrong.yaml",
            "version: 1\nentries:\n  - url: \(url)\n    hash: sha256:\(String(repeating: "0", count: 64))\n"
                + "  - url: oci://\(registry.address)/Team/files@sha256:\(digest)\n")
        let refused = try await WorkerBinary.run(["sync", wrong, "--cache-dir", cache])
        #expect(refused.code == 2)
        #expect(refused.stderr.contains("wrong.yaml:3:10: the hash is not the digest the URL names"), "\(refused.stderr)")
        #expect(refused.stderr.contains("wrong.yaml:5:10: 'Team/files' is not a repository name"), "\(refused.stderr)")
    }

    /// A registry behind htpasswd: without credentials the blob fails, the refusal saying none
    /// were sent; with Docker's config or REGISTRY_AUTH_FILE it is fetched; the password is never
    /// printed.
    @Test func aRegistryBehindBasicAuthGetsTheCredentialsOfDockersConfig() async throws {
        let storage = TemporaryDirectory()
        let open = try OCIRegistry(storage: storage.path)
        defer { open.stop() }
        let closed = try OCIRegistry(storage: storage.path, auth: .htpasswd(user: "reader", password: "s3cret-pass"))
        defer { closed.stop() }
        let bytes = Array("behind basic auth\n".utf8)
        let digest = try await open.push("team/files", bytes)
        let directory = TemporaryDirectory()
        let manifest = Self.manifest(directory, ["oci://\(closed.address)/team/files@sha256:\(digest)"])
        let none = try await WorkerBinary.run(
            ["sync", manifest, "--cache-dir", directory.path + "/c1", "--retries", "0"],
            environment: ["DOCKER_CONFIG": directory.path + "/nothing", "REGISTRY_AUTH_FILE": ""])
        #expect(none.code == 1)
        #expect(none.stderr.contains("HTTP 401 (sent without credentials: none for this registry"), "\(none.stderr)")
        let config = Self.dockerConfig(directory, registry: closed.address, user: "reader", password: "s3cret-pass")
        let docker = try await WorkerBinary.run(
            [
                "sync", manifest, "--cache-dir", directory.path + "/c2", "--retries", "0", "--report",
                directory.path + "/r.json",
            ], environment: ["DOCKER_CONFIG": config, "REGISTRY_AUTH_FILE": ""])
        #expect(docker.code == 0, "\(docker.stderr)")
        let podman = directory.write("auth.json", try String(contentsOfFile: config + "/config.json", encoding: .utf8))
        let withFile = try await WorkerBinary.run(
            ["sync", manifest, "--cache-dir", directory.path + "/c3", "--retries", "0"],
            environment: ["DOCKER_CONFIG": directory.path + "/nothing", "REGISTRY_AUTH_FILE": podman])
        #expect(withFile.code == 0, "\(withFile.stderr)")
        let secret = Data("reader:s3cret-pass".utf8).base64EncodedString()
        let said =
            none.stdout + none.stderr + docker.stdout + docker.stderr + withFile.stdout + withFile.stderr
            + ((try? String(contentsOfFile: directory.path + "/r.json", encoding: .utf8)) ?? "")
        #expect(!said.contains("s3cret-pass") && !said.contains(secret))
    }

    /// A registry behind a token service: the challenge is answered with a token for each
    /// repository's pull scope — anonymously for a public repository, with the Docker config's
    /// credentials for a private one (the realm on another origin over https) — which distribution
    /// checks; a registry that redirects a blob to its storage (another origin) has it fetched
    /// there without the token.
    @Test func aTokenIsAskedPerScopeAndNeverFollowsARedirectToStorage() async throws {
        let storage = TemporaryDirectory()
        let open = try OCIRegistry(storage: storage.path)
        defer { open.stop() }
        // Over https: credentials go to a realm on another origin only so.
        let tokens = try RegistryTokenService(users: ["reader": "t0ken-pass"], tls: true)
        defer { tokens.stop() }
        let trust = ["--ca-cert", try #require(tokens.tlsCertificate)]
        let registry = try OCIRegistry(storage: storage.path, auth: .token(tokens))
        defer { registry.stop() }
        let (one, two, three) = (Array("public one\n".utf8), Array("private two\n".utf8), Array("private three\n".utf8))
        let publicDigest = try await open.push("public/tools", one)
        let privateDigests = [try await open.push("team/files", two), try await open.push("team/files", three)]
        let directory = TemporaryDirectory()
        let publicOnly = Self.manifest(directory, ["oci://\(registry.address)/public/tools@sha256:\(publicDigest)"], name: "public.yaml")
        let anonymous = try await WorkerBinary.run(
            ["sync", publicOnly, "--cache-dir", directory.path + "/c1", "--retries", "0"] + trust,
            environment: ["DOCKER_CONFIG": directory.path + "/nothing", "REGISTRY_AUTH_FILE": ""])
        #expect(anonymous.code == 0, "\(anonymous.stderr)")
        #expect(tokens.requests.map(\.scope) == ["repository:public/tools:pull"] && tokens.requests.allSatisfy { $0.user == nil })
        // The private repository's blobs: one token for both, asked with the user's credentials.
        let config = Self.dockerConfig(directory, registry: registry.address, user: "reader", password: "t0ken-pass")
        let both = Self.manifest(directory, privateDigests.map { "oci://\(registry.address)/team/files@sha256:\($0)" }, name: "team.yaml")
        let denied = try await WorkerBinary.run(
            ["sync", both, "--cache-dir", directory.path + "/c2", "--retries", "0"] + trust,
            environment: ["DOCKER_CONFIG": directory.path + "/nothing", "REGISTRY_AUTH_FILE": ""])
        #expect(denied.code == 1, "an anonymous token has no access to team/files: \(denied.stderr)")
        let allowed = try await WorkerBinary.run(
            ["sync", both, "--cache-dir", directory.path + "/c2", "--retries", "0"] + trust,
            environment: ["DOCKER_CONFIG": config, "REGISTRY_AUTH_FILE": ""])
        #expect(allowed.code == 0, "\(allowed.stderr)")
        #expect(tokens.requests.filter { $0.scope == "repository:team/files:pull" && $0.user == "reader" }.count == 1)
        // Behind a front that sends blob reads to storage on another origin, as most registries do.
        let store = try NginxServer(http: "log_format seen '$request_uri $http_authorization';") { port, root in
            """
            listen 127.0.0.1:\(port);
            access_log \(root)/logs/seen.log seen;
            location /storage/ { rewrite ^/storage/(.*)$ /v2/$1 break; proxy_pass http://\(open.address); }
            """
        }
        defer { store.stop() }
        let front = try NginxServer(http: "log_format seen '$request_uri $http_authorization';") { port, root in
            """
            listen 127.0.0.1:\(port);
            access_log \(root)/logs/seen.log seen;
            location ~ ^/v2/(.+)/blobs/(sha256:[0-9a-f]+)$ { return 307 http://127.0.0.1:\(store.port)/storage/$1/blobs/$2; }
            location / { proxy_pass http://\(registry.address); proxy_set_header Host $http_host; }
            """
        }
        defer { front.stop() }
        let redirected = Self.manifest(
            directory, ["oci://127.0.0.1:\(front.port)/team/files@sha256:\(privateDigests[0])"], name: "front.yaml")
        let viaStorage = try await WorkerBinary.run(
            ["sync", redirected, "--cache-dir", directory.path + "/c3", "--retries", "0"] + trust,
            environment: [
                "DOCKER_CONFIG": Self.dockerConfig(
                    directory, registry: "127.0.0.1:\(front.port)",
                    user: "reader", password: "t0ken-pass"),
                "REGISTRY_AUTH_FILE": "",
            ])
        #expect(viaStorage.code == 0, "\(viaStorage.stderr)")
        let frontSeen = (try? String(contentsOfFile: front.directory.path + "/logs/seen.log", encoding: .utf8)) ?? ""
        let storeSeen = (try? String(contentsOfFile: store.directory.path + "/logs/seen.log", encoding: .utf8)) ?? ""
        #expect(frontSeen.contains("/blobs/sha256:\(privateDigests[0]) Bearer "), "the registry got its token: \(frontSeen)")
        #expect(storeSeen.contains("/storage/team/files/blobs/sha256:\(privateDigests[0]) -"), "the storage got none: \(storeSeen)")
        #expect(!storeSeen.contains("Bearer"))
        let said = anonymous.stderr + denied.stderr + allowed.stdout + allowed.stderr + viaStorage.stdout + viaStorage.stderr
        #expect(!said.contains("t0ken-pass") && !said.contains("Bearer ey"))
    }

    /// A tag is resolved as the run starts to its titled layers (pushed with ORAS): each an entry
    /// `…:TAG#TITLE` pinned by its digest (the report says it), in the tree under the entry's
    /// folder by title; a tag that moves updates the changed layer only; `worker manifest` writes
    /// the layers pinned; a tag the registry does not have stops the run (exit 3), as does
    /// `--offline`, which cannot read one.
    @Test func anArtifactsTagIsItsLayersAndATagThatMovesIsAnUpdate() async throws {
        let storage = TemporaryDirectory()
        let registry = try OCIRegistry(storage: storage.path)
        defer { registry.stop() }
        let (alpha, beta, changed) = (Array("alpha\n".utf8), Array("beta bytes\n".utf8), Array("beta, changed\n".utf8))
        try registry.pushArtifact("team/art", tag: "v1", files: ["a.txt": alpha, "b.bin": beta])
        let directory = TemporaryDirectory()
        let tag = "oci://\(registry.address)/team/art:v1"
        let manifest = directory.write("m.yaml", "version: 1\nentries:\n  - url: \(tag)\n    path: tools\n")
        let (cache, tree) = (directory.path + "/c", directory.path + "/tree")
        let first = try await WorkerBinary.run([
            "sync", manifest, "--cache-dir", cache, "--tree", tree, "--report", directory.path + "/r1.json",
        ])
        #expect(first.code == 0, "\(first.stderr)")
        #expect(FileManager.default.contents(atPath: tree + "/tools/a.txt") == Data(alpha))
        #expect(FileManager.default.contents(atPath: tree + "/tools/b.bin") == Data(beta))
        let rows = try Self.rows(directory.path + "/r1.json")
        #expect(
            rows["\(tag)#a.txt"]?["hash"] as? String == "sha256:" + sha256(alpha) && rows["\(tag)#a.txt"]?["status"] as? String == "added",
            "\(rows)")
        // The tag pinned to this manifest (`:TAG@sha256:`, as Docker pins a reference) keeps these
        // layers whatever the tag names later.
        let head = try await WorkerBinary.run(
            [
                "-s", "-I", "-H", "Accept: application/vnd.oci.image.manifest.v1+json",
                "http://\(registry.address)/v2/team/art/manifests/v1",
            ], executable: "/usr/bin/curl")
        let manifestDigest = try #require(
            head.stdout.split(separator: "\r\n").first { $0.lowercased().hasPrefix("docker-content-digest:") }?
                .split(separator: " ").last.map(String.init))
        let pinnedTag = directory.write("pinned-tag.yaml", "version: 1\nentries:\n  - url: \(tag)@\(manifestDigest)\n")
        // An index (as multi-platform artifacts are pushed) is its manifests' layers.
        let size = try #require(
            head.stdout.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }?
                .split(separator: " ").last.flatMap { Int($0) })
        try await registry.putManifest(
            "team/art", "all",
            """
            {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [
              {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "\(manifestDigest)", "size": \(size)}]}
            """, mediaType: "application/vnd.oci.image.index.v1+json")
        let index = directory.write("index.yaml", "version: 1\nentries:\n  - url: oci://\(registry.address)/team/art:all\n")
        let fromIndex = try await WorkerBinary.run(["sync", index, "--cache-dir", directory.path + "/c4", "--tree", directory.path + "/t4"])
        #expect(fromIndex.code == 0, "\(fromIndex.stderr)")
        #expect(FileManager.default.contents(atPath: directory.path + "/t4/a.txt") == Data(alpha))
        try registry.pushArtifact("team/art", tag: "v1", files: ["a.txt": alpha, "b.bin": changed])
        let second = try await WorkerBinary.run([
            "sync", manifest, "--cache-dir", cache, "--tree", tree, "--report", directory.path + "/r2.json",
        ])
        #expect(second.code == 0, "\(second.stderr)")
        let moved = try Self.rows(directory.path + "/r2.json")
        #expect(
            moved["\(tag)#b.bin"]?["status"] as? String == "updated"
                && moved["\(tag)#b.bin"]?["hash"] as? String == "sha256:" + sha256(changed),
            "\(moved)")
        #expect(FileManager.default.contents(atPath: tree + "/tools/b.bin") == Data(changed))
        #expect(second.stdout.contains("added 0, updated 1, reused 0, unchanged 1"), "\(second.stdout)")
        // The layers pinned, as a manifest; synced into another cache without asking for the tag.
        let written = try await WorkerBinary.run(["manifest", tag, "-o", directory.path + "/pinned.yaml"])
        #expect(written.code == 0, "\(written.stderr)")
        let text = try String(contentsOfFile: directory.path + "/pinned.yaml", encoding: .utf8)
        #expect(text.contains("\(tag)#b.bin\"\n    hash: sha256:\(sha256(changed))"), "\(text)")
        let pinned = try await WorkerBinary.run(["sync", directory.path + "/pinned.yaml", "--cache-dir", directory.path + "/c2"])
        #expect(pinned.code == 0 && pinned.stdout.contains("added 2,"), "\(pinned.stdout)\(pinned.stderr)")
        let keptPin = try await WorkerBinary.run([
            "sync", pinnedTag, "--cache-dir", directory.path + "/c3", "--tree", directory.path + "/t3",
        ])
        #expect(keptPin.code == 0, "\(keptPin.stderr)")
        #expect(
            FileManager.default.contents(atPath: directory.path + "/t3/b.bin") == Data(beta), "the pinned manifest's layer, at its title")
        let wrongPin = directory.write(
            "wrong-pin.yaml", "version: 1\nentries:\n  - url: \(tag)@sha256:\(String(repeating: "1", count: 64))\n")
        let refusedPin = try await WorkerBinary.run(["sync", wrongPin, "--cache-dir", directory.path + "/c3", "--retries", "0"])
        #expect(refusedPin.code == 3, "\(refusedPin.stderr)")
        let missing = directory.write("missing.yaml", "version: 1\nentries:\n  - url: oci://\(registry.address)/team/art:v9\n")
        let stopped = try await WorkerBinary.run(["sync", missing, "--cache-dir", cache, "--retries", "0"])
        #expect(
            stopped.code == 3 && stopped.stderr.contains("team/art:v9: the registry answered HTTP 404 (no such tag)"), "\(stopped.stderr)")
        // --offline asks no registry, so it cannot read a tag; `worker manifest` lists a tag, not a blob.
        let offline = try await WorkerBinary.run(["sync", manifest, "--cache-dir", cache, "--offline"])
        #expect(
            offline.code == 3
                && offline.stderr.contains("\(tag): the files it stands for are read from its origin, which --offline does not ask"),
            "\(offline.stderr)")
        let blob = "oci://\(registry.address)/team/art@sha256:" + sha256(alpha)
        let notATag = try await WorkerBinary.run(["manifest", blob])
        #expect(notATag.code == 2 && notATag.stderr.contains("is listed alone, as oci://REGISTRY/REPOSITORY:TAG"), "\(notATag.stderr)")
    }

    /// Everything else applies: `--rewrite oci://REGISTRY/=oci://MIRROR/` is a pull-through cache
    /// (the registry itself is never asked), and the mirrors map serves a registry that is down.
    @Test func aPullThroughMirrorAndTheMirrorsMapServeARegistryThatIsDown() async throws {
        let storage = TemporaryDirectory()
        let mirror = try OCIRegistry(storage: storage.path)
        defer { mirror.stop() }
        let bytes = Array("served by the mirror\n".utf8)
        let digest = try await mirror.push("team/files", bytes)
        let gone = try NginxServer.freePort()
        let directory = TemporaryDirectory()
        let url = "oci://127.0.0.1:\(gone)/team/files@sha256:\(digest)"
        let manifest = Self.manifest(directory, [url])
        let rewritten = try await WorkerBinary.run([
            "sync", manifest, "--cache-dir", directory.path + "/c1", "--retries", "0",
            "--rewrite", "oci://127.0.0.1:\(gone)/=oci://\(mirror.address)/", "--rewrite-strict",
        ])
        #expect(rewritten.code == 0, "\(rewritten.stderr)")
        let mapped = directory.write(
            "mapped.yaml",
            "version: 1\nmirrors:\n  \"oci://127.0.0.1:\(gone)/\": \"oci://\(mirror.address)/\"\n"
                + "entries:\n  - url: \(url)\n")
        let failedOver = try await WorkerBinary.run([
            "sync", mapped, "--cache-dir", directory.path + "/c2", "--retries", "0",
            "--report", directory.path + "/r.json",
        ])
        #expect(failedOver.code == 0, "\(failedOver.stderr)")
        #expect(
            failedOver.stderr.contains("failover: 1 entry from oci://\(mirror.address): oci://127.0.0.1:\(gone) "),
            "\(failedOver.stderr)")
        let report =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory.path + "/r.json"))) as? [String: Any]
        let failover = (report?["failover"] as? [[String: Any]])?.first
        #expect(
            failover?["origin"] as? String == "oci://127.0.0.1:\(gone)" && failover?["reason"] as? String == "connection",
            "\(report?["failover"] ?? "none")")
    }

    /// A token is asked for again before it expires while the downloads last: with 31-second
    /// tokens (renewed 30 s before they end), a run of a few seconds asks the scope twice or more.
    @Test func aTokenIsAskedForAgainBeforeItExpires() async throws {
        let storage = TemporaryDirectory()
        let open = try OCIRegistry(storage: storage.path)
        defer { open.stop() }
        let tokens = try RegistryTokenService(users: [:], lifetime: 31)
        defer { tokens.stop() }
        let registry = try OCIRegistry(storage: storage.path, auth: .token(tokens))
        defer { registry.stop() }
        var urls: [String] = []
        for number in 0..<8 {
            let digest = try await open.push("public/many", Array("blob \(number)\n".utf8))
            urls.append("oci://\(registry.address)/public/many@sha256:\(digest)")
        }
        let directory = TemporaryDirectory()
        let synced = try await WorkerBinary.run(
            [
                "sync", Self.manifest(directory, urls), "--cache-dir", directory.path + "/c",
                "--jobs", "1", "--max-rps", "2", "--retries", "0",
            ],
            environment: ["DOCKER_CONFIG": directory.path + "/nothing", "REGISTRY_AUTH_FILE": ""])
        #expect(synced.code == 0, "\(synced.stderr)")
        #expect(tokens.requests.filter { $0.scope == "repository:public/many:pull" }.count >= 2, "\(tokens.requests)")
    }

    /// A registry that lies: a blob answered with other bytes fails its entry (its digest is its
    /// hash) and reaches no tree; a tag's manifest asked by its digest and answered with another
    /// manifest (an attacker's layer) stops the run before any layer is asked for. (A stub:
    /// distribution never lies.)
    @Test func aRegistryThatLiesAboutABlobOrAManifestIsRefused() async throws {
        let registry = try RawOrigin()
        defer { registry.stop() }
        func ok(_ body: [UInt8], type: String = "application/octet-stream") -> [RawOrigin.Answer] {
            [
                RawOrigin.Answer(
                    "HTTP/1.1 200 OK\r\nContent-Type: \(type)\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n", body: body)
            ]
        }
        registry.script("/v2/", ok(Array("{}".utf8), type: "application/json"))
        let (real, lie) = (Array("the real blob\n".utf8), Array("the attacker's bytes\n".utf8))
        registry.script("/v2/team/files/blobs/sha256:\(sha256(real))", ok(lie))
        // The pinned manifest names the real layer; the registry answers one naming the attacker's.
        let layer = { (bytes: [UInt8]) in
            #"{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json", "config": {"mediaType": "application/vnd.oci.empty.v1+json", "#
                + #""digest": "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a", "size": 2}, "layers": [{"#
                + #""mediaType": "application/octet-stream", "digest": "sha256:\#(sha256(bytes))", "size": \#(bytes.count), "#
                + #""annotations": {"org.opencontainers.image.title": "a.txt"}}]}"#
        }
        let pinned = sha256(layer(real))
        registry.script(
            "/v2/team/art/manifests/sha256:\(pinned)", ok(Array(layer(lie).utf8), type: "application/vnd.oci.image.manifest.v1+json"))
        registry.script("/v2/team/art/blobs/sha256:\(sha256(lie))", ok(lie))
        let directory = TemporaryDirectory()
        let reg = "127.0.0.1:\(registry.port)"
        let blob = Self.manifest(directory, ["oci://\(reg)/team/files@sha256:\(sha256(real))"], name: "blob.yaml")
        let environment = ["DOCKER_CONFIG": directory.path + "/nothing", "REGISTRY_AUTH_FILE": ""]
        let lied = try await WorkerBinary.run(
            [
                "sync", blob, "--cache-dir", directory.path + "/c", "--tree", directory.path + "/t", "--retries", "0",
                "--plain-http", "--report", directory.path + "/r.json",
            ], environment: environment)
        #expect(lied.code == 1, "\(lied.stderr)")
        #expect(
            try Self.rows(directory.path + "/r.json")["oci://\(reg)/team/files@sha256:\(sha256(real))"]?["reason"] as? String
                == "hash_mismatch")
        #expect(
            ((try? FileManager.default.subpathsOfDirectory(atPath: directory.path + "/t/")) ?? []).filter { !$0.isEmpty }.isEmpty,
            "nothing reached the tree")
        let tag = directory.write("tag.yaml", "version: 1\nentries:\n  - url: oci://\(reg)/team/art:v1@sha256:\(pinned)\n")
        let swapped = try await WorkerBinary.run(
            [
                "sync", tag, "--cache-dir", directory.path + "/c", "--tree", directory.path + "/t2", "--retries", "0",
                "--plain-http",
            ], environment: environment)
        #expect(swapped.code == 3, "\(swapped.stderr)")
        #expect(swapped.stderr.contains("the manifest asked by its digest sha256:\(pinned.prefix(12))… has another"), "\(swapped.stderr)")
        #expect(registry.hits("/v2/team/art/blobs/sha256:\(sha256(lie))") == 0, "the attacker's layer was asked for")
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/t2"))
    }

    /// A blob fetched with a registry's credentials is as private as the registry: `push` keeps it
    /// local; one from an anonymous registry goes to the tier.
    @Test func aBlobFetchedWithCredentialsStaysOffTheTier() async throws {
        let storage = TemporaryDirectory()
        let open = try OCIRegistry(storage: storage.path)
        defer { open.stop() }
        let closed = try OCIRegistry(storage: storage.path, auth: .htpasswd(user: "reader", password: "s3cret-pass"))
        defer { closed.stop() }
        let tier = try WebDAVTier()
        defer { tier.stop() }
        let (privateBytes, publicBytes) = (Array("private layer\n".utf8), Array("public layer\n".utf8))
        let privateDigest = try await open.push("team/files", privateBytes)
        let publicDigest = try await open.push("public/files", publicBytes)
        let directory = TemporaryDirectory()
        let manifest = Self.manifest(
            directory,
            [
                "oci://\(closed.address)/team/files@sha256:\(privateDigest)",
                "oci://\(open.address)/public/files@sha256:\(publicDigest)",
            ])
        let config = Self.dockerConfig(directory, registry: closed.address, user: "reader", password: "s3cret-pass")
        let cache = directory.path + "/c"
        let synced = try await WorkerBinary.run(
            ["sync", manifest, "--cache-dir", cache, "--retries", "0"],
            environment: ["DOCKER_CONFIG": config, "REGISTRY_AUTH_FILE": ""])
        #expect(synced.code == 0, "\(synced.stderr)")
        let push = try await WorkerBinary.run(["push", "--cache-dir", cache, "--remote-cache", tier.url, "--progress", "never"])
        #expect(push.code == 0, "\(push.stdout) \(push.stderr)")
        #expect(push.stdout.contains("1 private (fetched with credentials) kept local"), "\(push.stdout)")
        #expect(tier.objects == [publicDigest], "\(tier.objects)")
    }
}
