import Foundation
import Testing
import WorkerTestSupport

/// Remote and signed manifests through the binary: the manifest served by nginx, signatures made
/// by the real tools (`minisign`, `ssh-keygen -Y sign`), and TUF's attacks — an arbitrary
/// manifest, a rollback to an older signed one, a freeze on an expired one, a stale copy — each
/// refused before any request to the entries' origin.
@Suite(.hangLimit) struct SignedManifestTests {
    /// A publisher: nginx serving `www/` (the manifest, its signature, the files it lists), and
    /// a minisign key pair made by minisign.
    final class Publisher {
        let directory = TemporaryDirectory()
        var www: String { directory.path + "/www" }
        var cache: String { directory.path + "/cache" }
        var publicKey: String { directory.path + "/key.pub" }
        let server: NginxServer

        init() async throws {
            let www = directory.path + "/www"
            try FileManager.default.createDirectory(atPath: www + "/files", withIntermediateDirectories: true)
            server = try NginxServer(server: { port, _ in "listen 127.0.0.1:\(port);\nroot \(www);" })
            let made = try await Self.tool("/usr/bin/minisign", ["-G", "-W", "-p", publicKey, "-s", directory.path + "/key.sec"])
            #expect(made.code == 0, "minisign -G: \(made.stderr)")
        }

        deinit { server.stop() }

        var url: String { "http://127.0.0.1:\(server.port)/avatars.yaml" }
        /// The mtime of the last publish: each publish gets a second of its own. nginx's ETag is
        /// the size and the second of the mtime, and two versions of one size written within a
        /// second would otherwise look the same to a conditional request.
        private var publishedAt = 0.0

        /// Serves `files` (name → text) under files/ and a manifest of them (relative URLs,
        /// resolved against the manifest's own URL) with these header lines; signs it unless told not to.
        @discardableResult
        func publish(_ files: [String: String], header: String = "", sign: Bool = true, takingSlot: Bool = true) async throws -> String {
            for (name, text) in files { _ = directory.write("www/files/" + name, text) }
            var yaml = "version: 1\nname: avatars\n\(header)entries:\n"
            for name in files.keys.sorted() { yaml += "  - url: files/\(name)\n    hash: sha256:\(sha256(files[name]!))\n" }
            let manifest = directory.write("www/avatars.yaml", yaml)
            try? FileManager.default.removeItem(atPath: manifest + ".minisig")
            if sign {
                let signed = try await Self.tool(
                    "/usr/bin/minisign",
                    [
                        "-S", "-s", directory.path + "/key.sec", "-m", manifest,
                        "-t", "avatars",
                    ], takingSlot: takingSlot)
                #expect(signed.code == 0, "minisign -S: \(signed.stderr)")
            }
            publishedAt = max(Date().timeIntervalSince1970.rounded(.down), publishedAt + 1)
            let second = Date(timeIntervalSince1970: publishedAt)
            for path in [manifest, manifest + ".minisig"] + files.keys.map({ www + "/files/" + $0 })
            where FileManager.default.fileExists(atPath: path) {
                try FileManager.default.setAttributes([.modificationDate: second], ofItemAtPath: path)
            }
            return yaml
        }

        /// `worker sync URL --trusted-keys key.pub …`.
        func sync(_ extra: [String] = [], prepare: (() async throws -> Void)? = nil) async throws -> WorkerBinary.Result {
            try await WorkerBinary.run(
                ["sync", url, "--cache-dir", cache, "--trusted-keys", publicKey, "--progress", "never"] + extra,
                prepare: prepare)
        }

        /// Requests nginx saw for the entries' files since `since` requests.
        func fileRequests(after since: Int) -> [NginxServer.Request] {
            Array(server.requests.dropFirst(since)).filter { $0.path.hasPrefix("/files/") }
        }

        static func tool(_ path: String, _ arguments: [String], takingSlot: Bool = true) async throws -> WorkerBinary.Result {
            try await WorkerBinary.run(arguments, executable: path, takingSlot: takingSlot)
        }
    }

    /// A signed remote manifest: verified, synced with its relative URLs against its own URL; the
    /// next run (after one with --prune) asks for the manifest once, conditionally (304), and for
    /// nothing else.
    @Test func aSignedRemoteManifestSyncsAndAnUnchangedOneCostsOneConditionalRequest() async throws {
        let publisher = try await Publisher()
        try await publisher.publish(["a.txt": "a\n", "b.txt": "b\n"], header: "serial: 1\n")
        // plan never creates a cache, also for a manifest it reads from a URL.
        let nowhere = publisher.directory.path + "/no-cache"
        let plan = try await WorkerBinary.run(["plan", publisher.url, "--cache-dir", nowhere, "--trusted-keys", publisher.publicKey])
        #expect(plan.code == 0, "\(plan.stderr)")
        #expect(plan.stdout.contains("to add 2"), "\(plan.stdout)")
        #expect(!FileManager.default.fileExists(atPath: nowhere))
        // A CI cache key of a remote manifest: its digest as it is now.
        let fingerprint = try await WorkerBinary.run(["fingerprint", publisher.url])
        #expect(fingerprint.code == 0, "\(fingerprint.stderr)")
        #expect(fingerprint.stdout.trimmingCharacters(in: .whitespacesAndNewlines).count == 64, "\(fingerprint.stdout)")
        let first = try await publisher.sync(["--report", publisher.directory.path + "/report.json"])
        #expect(first.code == 0, "\(first.stderr)")
        #expect(first.stdout.contains("added 2"), "\(first.stdout)")
        let report = try #require(
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: publisher.directory.path + "/report.json"))) as? [String: Any])
        #expect(((report["manifests"] as? [[String: Any]])?.first?["path"] as? String) == publisher.url)
        #expect(publisher.fileRequests(after: 0).count == 2)
        let exported = try await WorkerBinary.run([
            "export", "--layout", "tree", publisher.directory.path + "/tree", publisher.url,
            "--cache-dir", publisher.cache, "--trusted-keys", publisher.publicKey,
        ])
        #expect(exported.code == 0, "\(exported.stderr)")
        #expect((try? String(contentsOfFile: publisher.directory.path + "/tree/files/a.txt", encoding: .utf8)) == "a\n")

        // --prune keeps the manifest's own row (its ETag): the next run still asks conditionally.
        let pruned = try await publisher.sync(["--prune"])
        #expect(pruned.code == 0, "\(pruned.stderr)")
        let seen = publisher.server.requests.count
        let warm = try await publisher.sync()
        #expect(warm.code == 0, "\(warm.stderr)")
        #expect(warm.stdout.contains("unchanged 2"), "\(warm.stdout)")
        let asked = Array(publisher.server.requests.dropFirst(seen))
        #expect(
            asked == [NginxServer.Request(method: "GET", path: "/avatars.yaml", protocolName: "HTTP/1.1", status: 304)],
            "\(asked)")
    }

    /// An arbitrary manifest: one changed after it was signed, one signed by another key, and an
    /// unsigned one are refused (exit 2, naming the key expected) before any entry is fetched.
    @Test func anArbitraryManifestIsRefusedBeforeAnyRequest() async throws {
        let publisher = try await Publisher()
        try await publisher.publish(["a.txt": "a\n"])
        let expected =
            try String(contentsOfFile: publisher.publicKey, encoding: .utf8)
            .split(separator: "\n")[0].split(separator: " ").last.map(String.init) ?? "?"

        // Changed after it was signed: the signature stays, the bytes are an attacker's.
        let manifest = publisher.www + "/avatars.yaml"
        try (try String(contentsOfFile: manifest, encoding: .utf8) + "  - url: files/evil.txt\n    hash: sha256:\(sha256("evil\n"))\n")
            .write(toFile: manifest, atomically: true, encoding: .utf8)
        _ = publisher.directory.write("www/files/evil.txt", "evil\n")
        let changed = try await publisher.sync()
        #expect(changed.code == 2)
        #expect(changed.stderr.contains("does not match the manifest's bytes"), "\(changed.stderr)")
        #expect(changed.stderr.contains("minisign key \(expected)"), "\(changed.stderr)")

        // Unsigned.
        try await publisher.publish(["a.txt": "a\n"], sign: false)
        let unsigned = try await publisher.sync()
        #expect(unsigned.code == 2)
        #expect(unsigned.stderr.contains("not signed"), "\(unsigned.stderr)")
        #expect(unsigned.stderr.contains("expected one by minisign key \(expected)"), "\(unsigned.stderr)")

        // Signed by a key nobody trusts.
        let other = publisher.directory.path + "/other"
        _ = try await Publisher.tool("/usr/bin/minisign", ["-G", "-W", "-p", other + ".pub", "-s", other + ".sec"])
        _ = try await Publisher.tool("/usr/bin/minisign", ["-S", "-s", other + ".sec", "-m", manifest])
        let untrusted = try await publisher.sync()
        #expect(untrusted.code == 2)
        #expect(untrusted.stderr.contains("which is not a trusted key"), "\(untrusted.stderr)")
        #expect(publisher.fileRequests(after: 0).isEmpty, "an entry was fetched: \(publisher.fileRequests(after: 0))")
        #expect(
            !FileManager.default.fileExists(
                atPath: publisher.cache + "/objects/sha256/" + sha256("evil\n").prefix(2) + "/" + sha256("evil\n")))
    }

    /// A rollback: once serial 5 is accepted, an older manifest (serial 4, validly signed) is
    /// refused, naming both serials and the line; the same serial with other bytes is refused
    /// too; after 5 → 7 a signed 6 is a rollback (the serial kept is the last accepted, not the
    /// first).
    @Test func aRollbackToAnOlderSignedManifestIsRefused() async throws {
        let publisher = try await Publisher()
        try await publisher.publish(["a.txt": "a, version 5\n"], header: "serial: 5\n")
        #expect(try await publisher.sync().code == 0)
        try await publisher.publish(["a.txt": "a, version 4\n"], header: "serial: 4\n")
        let seen = publisher.server.requests.count
        let rollback = try await publisher.sync()
        #expect(rollback.code == 2)
        #expect(rollback.stderr.contains("\(publisher.url):3:9: serial 4 is lower than 5"), "\(rollback.stderr)")
        #expect(publisher.fileRequests(after: seen).isEmpty)
        try await publisher.publish(["a.txt": "a, version 5 again\n"], header: "serial: 5\n")
        let same = try await publisher.sync()
        #expect(same.code == 2, "\(same.stderr)")
        #expect(same.stderr.contains("\(publisher.url):3:9: serial 5 was accepted before with other bytes"), "\(same.stderr)")
        #expect(publisher.fileRequests(after: seen).isEmpty)

        try await publisher.publish(["a.txt": "a, version 7\n"], header: "serial: 7\n")
        let seven = try await publisher.sync()
        #expect(seven.code == 0, "\(seven.stderr)")
        #expect(seven.stdout.contains("updated 1"), "the changed manifest was read anew: \(seven.stdout)")
        try await publisher.publish(["a.txt": "a, version 6\n"], header: "serial: 6\n")
        let six = try await publisher.sync()
        #expect(six.code == 2, "\(six.stderr)")
        #expect(six.stderr.contains("serial 6 is lower than 7"), "\(six.stderr)")
        #expect(
            !FileManager.default.fileExists(
                atPath: publisher.cache + "/objects/sha256/" + sha256("a, version 6\n").prefix(2)
                    + "/" + sha256("a, version 6\n")))
    }

    /// A freeze: a manifest past its `expires` is refused; and when the manifest cannot be
    /// fetched, the accepted copy serves only while younger than --manifest-max-age (else exit 3,
    /// nothing fetched).
    @Test func anExpiredManifestAndAStaleCopyAreRefused() async throws {
        let publisher = try await Publisher()
        try await publisher.publish(["a.txt": "a\n"], header: "expires: \"2020-01-01T00:00:00Z\"\n")
        let expired = try await publisher.sync()
        #expect(expired.code == 2)
        #expect(expired.stderr.contains(":3:10: expired at 2020-01-01T00:00:00Z"), "\(expired.stderr)")
        #expect(publisher.fileRequests(after: 0).isEmpty)

        try await publisher.publish(["a.txt": "a\n", "b.txt": "b\n"], header: "expires: \"2099-01-01T00:00:00Z\"\n")
        #expect(try await publisher.sync().code == 0)
        publisher.server.stop()
        let offline = try await publisher.sync()
        #expect(offline.code == 0, "\(offline.stderr)")
        #expect(offline.stderr.contains("using the copy accepted"), "\(offline.stderr)")
        try await Task.sleep(nanoseconds: 1_200_000_000)
        let stale = try await publisher.sync(["--manifest-max-age", "1s"])
        #expect(stale.code == 3)
        #expect(stale.stderr.contains("more than --manifest-max-age"), "\(stale.stderr)")
    }

    /// SSH signatures made by ssh-keygen in the `worker-manifest` namespace, checked against an
    /// allowed-signers file (as git does); another namespace or an unlisted key is refused.
    @Test func sshSignaturesAreCheckedAgainstAllowedSigners() async throws {
        let publisher = try await Publisher()
        try await publisher.publish(["a.txt": "a\n"], sign: false)
        let key = publisher.directory.path + "/id_ed25519"
        _ = try await Publisher.tool("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", key])
        let line = try String(contentsOfFile: key + ".pub", encoding: .utf8).split(separator: " ").prefix(2).joined(separator: " ")
        let allowed = publisher.directory.write("allowed_signers", "ops@example.org namespaces=\"worker-manifest\" \(line)\n")
        let manifest = publisher.www + "/avatars.yaml"
        func sign(_ namespace: String, with key: String) async throws {
            try? FileManager.default.removeItem(atPath: manifest + ".sig")
            let signed = try await Publisher.tool("/usr/bin/ssh-keygen", ["-Y", "sign", "-n", namespace, "-f", key, manifest])
            #expect(signed.code == 0, "\(signed.stderr)")
        }
        func sync() async throws -> WorkerBinary.Result {
            try await WorkerBinary.run(
                ["sync", publisher.url, "--cache-dir", publisher.cache, "--progress", "never"],
                environment: ["WORKER_TRUSTED_KEYS": allowed])
        }
        try await sign("git", with: key)
        let wrongNamespace = try await sync()
        #expect(wrongNamespace.code == 2)
        #expect(wrongNamespace.stderr.contains("namespace 'git', not 'worker-manifest'"), "\(wrongNamespace.stderr)")
        let other = publisher.directory.path + "/other"
        _ = try await Publisher.tool("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", other])
        try await sign("worker-manifest", with: other)
        let unlisted = try await sync()
        #expect(unlisted.code == 2)
        #expect(unlisted.stderr.contains("not a trusted key"), "\(unlisted.stderr)")
        #expect(publisher.fileRequests(after: 0).isEmpty)
        try await sign("worker-manifest", with: key)
        let good = try await sync()
        #expect(good.code == 0, "\(good.stderr)")
        #expect(good.stdout.contains("added 1"), "\(good.stdout)")
    }

    /// A local manifest with keys configured needs its signature beside it; `worker manifest`
    /// writes `serial` and `expires` when asked, and what it writes reads back.
    @Test func localManifestsAreCheckedTooAndManifestWritesSerialAndExpiry() async throws {
        let directory = TemporaryDirectory()
        _ = directory.write("site/a.txt", "a\n")
        let written = try await WorkerBinary.run([
            "manifest", directory.path + "/site", "--base-url", "https://cdn.example.org/site/",
            "--serial", "42", "--expires-in", "7d", "-o", directory.path + "/m.yaml",
        ])
        #expect(written.code == 0, "\(written.stderr)")
        let text = try String(contentsOfFile: directory.path + "/m.yaml", encoding: .utf8)
        #expect(text.contains("\nserial: 42\n"), "\(text)")
        let expires = try #require(text.split(separator: "\n").first { $0.hasPrefix("expires: ") })
        #expect(expires.hasPrefix("expires: \"20") && expires.hasSuffix("Z\""), "\(expires)")
        let plan = try await WorkerBinary.run(["plan", directory.path + "/m.yaml", "--cache-dir", directory.path + "/cache"])
        #expect(plan.code == 0, "\(plan.stderr)")

        _ = try await Publisher.tool("/usr/bin/minisign", ["-G", "-W", "-p", directory.path + "/k.pub", "-s", directory.path + "/k.sec"])
        let unsigned = try await WorkerBinary.run([
            "sync", directory.path + "/m.yaml", "--cache-dir", directory.path + "/cache",
            "--trusted-keys", directory.path + "/k.pub",
        ])
        #expect(unsigned.code == 2)
        #expect(unsigned.stderr.contains("m.yaml: not signed"), "\(unsigned.stderr)")
        let badKeys = try await WorkerBinary.run([
            "plan", directory.path + "/m.yaml", "--cache-dir", directory.path + "/cache",
            "--trusted-keys", directory.write("keys", "not a key\n"),
        ])
        #expect(badKeys.code == 2)
        #expect(badKeys.stderr.contains("keys:1:1: neither a minisign public key nor an allowed-signers line"), "\(badKeys.stderr)")
    }

    /// A manifest in a bucket: `s3://BUCKET/KEY` fetched with the run's AWS settings (moto checks
    /// every signature), its signature beside it in the bucket, its relative keys resolved in
    /// the same bucket folder.
    @Test func aSignedManifestInABucket() async throws {
        let directory = TemporaryDirectory()
        let yaml = "version: 1\nname: m\nserial: 3\nentries:\n  - url: files/a.txt\n    hash: sha256:\(sha256("bucket a\n"))\n"
        let manifest = directory.write("m.yaml", yaml)
        _ = try await Publisher.tool("/usr/bin/minisign", ["-G", "-W", "-p", directory.path + "/k.pub", "-s", directory.path + "/k.sec"])
        _ = try await Publisher.tool("/usr/bin/minisign", ["-S", "-s", directory.path + "/k.sec", "-m", manifest])
        let signature = try [UInt8](Data(contentsOf: URL(fileURLWithPath: manifest + ".minisig")))
        let moto = try MotoS3(objects: [
            "fleet": [
                "manifests/m.yaml": Array(yaml.utf8), "manifests/m.yaml.minisig": signature,
                "manifests/files/a.txt": Array("bucket a\n".utf8),
            ]
        ])
        defer { moto.stop() }
        let synced = try await WorkerBinary.run(
            [
                "sync", "s3://fleet/manifests/m.yaml", "--cache-dir", directory.path + "/cache",
                "--trusted-keys", directory.path + "/k.pub", "--progress", "never",
            ],
            environment: moto.environment(moto.user, home: directory.path))
        #expect(synced.code == 0, "\(synced.stderr)")
        #expect(synced.stdout.contains("added 1"), "\(synced.stdout)")
        #expect(moto.requests.contains { $0.hasPrefix("GET /fleet/manifests/files/a.txt 200") }, "\(moto.requests)")
        try moto.put("fleet", "manifests/m.yaml", Array((yaml + "# changed\n").utf8), sha256: false)
        let tampered = try await WorkerBinary.run(
            [
                "sync", "s3://fleet/manifests/m.yaml", "--cache-dir", directory.path + "/cache",
                "--trusted-keys", directory.path + "/k.pub", "--progress", "never",
            ],
            environment: moto.environment(moto.user, home: directory.path))
        #expect(tampered.code == 2, "\(tampered.stderr)")
        #expect(tampered.stderr.contains("s3://fleet/manifests/m.yaml: the signature by minisign key"), "\(tampered.stderr)")
    }

    /// `--rewrite` routes the manifest's own URL (and its relative entries) to a proxy; under
    /// `--rewrite-strict` a manifest URL no rule covers is refused (exit 2), warm or cold.
    @Test func aRemoteManifestFollowsRewriteRules() async throws {
        let publisher = try await Publisher()
        try await publisher.publish(["a.txt": "a\n"])
        let elsewhere = "http://127.0.0.1:1/avatars.yaml"  // never contacted: the rule sends it to nginx
        let rule = "http://127.0.0.1:1/=http://127.0.0.1:\(publisher.server.port)/"
        let routed = try await WorkerBinary.run([
            "sync", elsewhere, "--cache-dir", publisher.cache, "--trusted-keys", publisher.publicKey,
            "--rewrite", rule, "--rewrite-strict", "--progress", "never",
        ])
        #expect(routed.code == 0, "\(routed.stderr)")
        #expect(routed.stdout.contains("added 1"), "\(routed.stdout)")
        for attempt in ["cold", "warm"] {
            let refused = try await WorkerBinary.run([
                "sync", elsewhere, "--cache-dir", publisher.cache + (attempt == "cold" ? "-2" : ""),
                "--trusted-keys", publisher.publicKey, "--rewrite-strict",
            ])
            #expect(refused.code == 2, "\(attempt): \(refused.stderr)")
            #expect(refused.stderr.contains("refusing to run (--rewrite-strict): no rule covers \(elsewhere)"), "\(refused.stderr)")
        }
    }

    /// `--signature URL` names a signature kept elsewhere than beside the manifest; `verify
    /// --repair` reads a remote manifest the same way (signed, through the cache).
    @Test func aSignatureNamedByURLAndVerifyRepairOfARemoteManifest() async throws {
        let publisher = try await Publisher()
        try await publisher.publish(["a.txt": "a\n"], sign: false)
        let elsewhere = publisher.www + "/signatures/avatars.minisig"
        try FileManager.default.createDirectory(atPath: publisher.www + "/signatures", withIntermediateDirectories: true)
        let signed = try await Publisher.tool(
            "/usr/bin/minisign",
            [
                "-S", "-s", publisher.directory.path + "/key.sec",
                "-m", publisher.www + "/avatars.yaml", "-x", elsewhere,
            ])
        #expect(signed.code == 0, "\(signed.stderr)")
        let signature = "http://127.0.0.1:\(publisher.server.port)/signatures/avatars.minisig"
        let beside = try await publisher.sync()
        #expect(beside.code == 2, "no signature beside it: \(beside.stderr)")
        let named = try await publisher.sync(["--signature", signature])
        #expect(named.code == 0, "\(named.stderr)")
        #expect(named.stdout.contains("added 1"), "\(named.stdout)")
        let verified = try await WorkerBinary.run([
            "verify", "--repair", publisher.url, "--cache-dir", publisher.cache,
            "--trusted-keys", publisher.publicKey, "--signature", signature,
        ])
        #expect(verified.code == 0, "\(verified.stderr)")
        // Unchanged since it was accepted: the signature kept with the accepted copy serves.
        let kept = try await WorkerBinary.run([
            "verify", "--repair", publisher.url, "--cache-dir", publisher.cache,
            "--trusted-keys", publisher.publicKey,
        ])
        #expect(kept.code == 0, "\(kept.stderr)")
        // Changed and signed elsewhere again, without --signature: refused.
        try await publisher.publish(["a.txt": "a, changed\n"], sign: false)
        let changed = try await WorkerBinary.run([
            "verify", "--repair", publisher.url, "--cache-dir", publisher.cache,
            "--trusted-keys", publisher.publicKey,
        ])
        #expect(changed.code == 2, "\(changed.stderr)")
        #expect(changed.stderr.contains("not signed"), "\(changed.stderr)")
    }
}
