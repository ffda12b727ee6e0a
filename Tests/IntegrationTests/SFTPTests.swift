import Foundation
import Testing
import WorkerTestSupport

/// `sftp://` origins against Debian's openssh-server on loopback (issue 81): entries and
/// `base_url` fetched with the user's key, the host checked against known_hosts — an unknown, a
/// changed host key and a wrong user key each refused by name, never retried — resume of a cut
/// transfer, `--rewrite` and strict rewrites, mirrors with failover, the tier (SFTP bodies are
/// private), `--tree`, `get`, `path`, `verify --repair`, and `worker manifest` of a folder.
@Suite(.hangLimit, .enabled(if: Conditions.canRunSSHD, "needs root and openssh-server"))
struct SFTPTests {
    private static func rows(_ report: String) throws -> [String: [String: Any]] {
        try RegistryTests.rows(report)
    }

    /// The options every run against `server` takes: its user key and known_hosts.
    private static func login(_ server: SSHServer) -> [String] {
        ["--ssh-key", server.userKey, "--ssh-known-hosts", server.knownHosts]
    }

    /// A base_url manifest of three files (a folder, a name with a space): synced, published as
    /// a tree, read with `get` and `path`, repaired by `verify --repair`; a warm run logs in to
    /// nothing; the bodies are private, so the tier gets none of them.
    @Test func filesOfAnSFTPServerAreSyncedAndAWarmRunAsksNothing() async throws {
        let server = try SSHServer()
        defer { server.stop() }
        let tier = try WebDAVTier()
        defer { tier.stop() }
        let files: [(String, [UInt8])] = [
            ("a.txt", Array("first\n".utf8)), ("sub/b.bin", (0..<300_000).map { UInt8($0 % 251) }),
            ("sub/with space.txt", Array("spaced\n".utf8)),
        ]
        var text = "version: 1\nbase_url: sftp://\(server.address)\(server.root)/\nentries:\n"
        for (path, bytes) in files {
            let hash = try server.serve(path, bytes)
            text += "  - url: \(path.replacingOccurrences(of: " ", with: "%20"))\n    hash: sha256:\(hash)\n"
        }
        let directory = TemporaryDirectory()
        let manifest = directory.write("m.yaml", text)
        let cache = directory.path + "/c", tree = directory.path + "/tree", report = directory.path + "/r.json"
        let synced = try await WorkerBinary.run(
            [
                "sync", manifest, "--cache-dir", cache, "--tree", tree, "--report", report,
                "--remote-cache", tier.url,
            ] + Self.login(server))
        #expect(synced.code == 0, "\(synced.stdout)\(synced.stderr)")
        let rows = try Self.rows(report)
        for (path, bytes) in files {
            let url = "sftp://\(server.address)\(server.root)/\(path.replacingOccurrences(of: " ", with: "%20"))"
            #expect(rows[url]?["status"] as? String == "added", "\(rows)")
            #expect(FileManager.default.contents(atPath: tree + "/" + path) == Data(bytes), "\(path)")
        }
        #expect(tier.objects.isEmpty, "SFTP bodies are private, yet the tier got \(tier.objects)")
        let logins = server.logins
        #expect(logins >= 1)
        let warm = try await WorkerBinary.run(["sync", manifest, "--cache-dir", cache, "--tree", tree] + Self.login(server))
        #expect(warm.code == 0 && warm.stdout.contains("unchanged 3"), "\(warm.stdout)\(warm.stderr)")
        #expect(server.logins == logins, "a warm run logged in")
        let url = server.url("a.txt")
        let got = try await WorkerBinary.run(["get", url, "--cache-dir", cache, "-o", "-"] + Self.login(server))
        #expect(got.code == 0 && got.stdout == "first\n", "\(got.stderr)")
        let path = try await WorkerBinary.run(["path", url, "--cache-dir", cache])
        #expect(path.code == 0, "\(path.stderr)")
        let object = String(path.stdout.dropLast())
        try FileManager.default.removeItem(atPath: object)
        let repaired = try await WorkerBinary.run(["verify", manifest, "--repair", "--cache-dir", cache] + Self.login(server))
        #expect(repaired.code == 0, "\(repaired.stdout)\(repaired.stderr)")
        #expect(FileManager.default.contents(atPath: object) == Data("first\n".utf8))
    }

    /// Keys as ssh finds them: ~/.ssh/id_ed25519 and ~/.ssh/known_hosts of HOME, the user the
    /// local one; a missing key, no agent and no --ssh-key is a usage error before any request.
    @Test func keysAndKnownHostsAreFoundWhereSshFindsThem() async throws {
        let server = try SSHServer()
        defer { server.stop() }
        let hash = try server.serve("f.txt", Array("found\n".utf8))
        let directory = TemporaryDirectory()
        let home = directory.path + "/home"
        try FileManager.default.createDirectory(atPath: home + "/.ssh", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: server.userKey, toPath: home + "/.ssh/id_ed25519")
        try FileManager.default.copyItem(atPath: server.knownHosts, toPath: home + "/.ssh/known_hosts")
        let manifest = directory.write("m.yaml", "version: 1\nentries:\n  - url: \(server.url("f.txt"))\n    hash: sha256:\(hash)\n")
        let synced = try await WorkerBinary.run(
            ["sync", manifest, "--cache-dir", directory.path + "/c"],
            environment: ["HOME": home, "SSH_AUTH_SOCK": ""])
        #expect(synced.code == 0, "\(synced.stdout)\(synced.stderr)")
        let bare = directory.path + "/bare"
        try FileManager.default.createDirectory(atPath: bare, withIntermediateDirectories: true)
        let keyless = try await WorkerBinary.run(
            ["sync", manifest, "--cache-dir", directory.path + "/c2"],
            environment: ["HOME": bare, "SSH_AUTH_SOCK": ""])
        #expect(keyless.code == 2, "\(keyless.stdout)\(keyless.stderr)")
        #expect(keyless.stderr.contains("cannot reach sftp:// URLs: no SSH key"), "\(keyless.stderr)")
        #expect(server.logins == 1)
    }

    /// An unknown host key is refused by name (the host, the key's type and fingerprint, the
    /// file), once, not retried; `--ssh-accept-new-hosts` trusts it and adds it to the file, and
    /// the next run needs no flag.
    @Test func anUnknownHostKeyIsRefusedUntilTheOperatorTrustsIt() async throws {
        let server = try SSHServer()
        defer { server.stop() }
        let hash = try server.serve("f.txt", Array("trusted later\n".utf8))
        let directory = TemporaryDirectory()
        let knownHosts = directory.write("known_hosts", "# the operator's own comment\n")
        let manifest = directory.write("m.yaml", "version: 1\nentries:\n  - url: \(server.url("f.txt"))\n    hash: sha256:\(hash)\n")
        let report = directory.path + "/r.json"
        let login = ["--ssh-key", server.userKey, "--ssh-known-hosts", knownHosts]
        let refused = try await WorkerBinary.run(["sync", manifest, "--cache-dir", directory.path + "/c", "--report", report] + login)
        #expect(refused.code == 1, "\(refused.stdout)\(refused.stderr)")
        #expect(
            refused.stderr.contains(
                "unknown host key: \(server.address) offers its ssh-ed25519 key \(server.fingerprint), which is not in \(knownHosts)"),
            "\(refused.stderr)")
        #expect(try Self.rows(report)[server.url("f.txt")]?["attempts"] as? Int == 1)
        #expect(server.logins == 0)
        let trusted = try await WorkerBinary.run(
            ["sync", manifest, "--cache-dir", directory.path + "/c", "--ssh-accept-new-hosts"] + login)
        #expect(trusted.code == 0, "\(trusted.stdout)\(trusted.stderr)")
        let file = try String(contentsOfFile: knownHosts, encoding: .utf8)
        #expect(file.hasPrefix("# the operator's own comment\n") && file.contains(server.hostKeyLine), "\(file)")
        let again = try await WorkerBinary.run(["sync", manifest, "--cache-dir", directory.path + "/c2"] + login)
        #expect(again.code == 0, "\(again.stdout)\(again.stderr)")
    }

    /// A host whose key is not the one known_hosts has is refused, with `--ssh-accept-new-hosts`
    /// too, and the file is left as it was.
    @Test func aChangedHostKeyIsRefusedEvenWhenNewHostsAreTrusted() async throws {
        let server = try SSHServer()
        defer { server.stop() }
        let hash = try server.serve("f.txt", Array("behind a changed key\n".utf8))
        let directory = TemporaryDirectory()
        let knownHosts = directory.write("known_hosts", server.otherHostKeyLine + "\n")
        let manifest = directory.write("m.yaml", "version: 1\nentries:\n  - url: \(server.url("f.txt"))\n    hash: sha256:\(hash)\n")
        for extra in [[], ["--ssh-accept-new-hosts"]] {
            let refused = try await WorkerBinary.run(
                [
                    "sync", manifest, "--cache-dir", directory.path + "/c", "--ssh-key", server.userKey,
                    "--ssh-known-hosts", knownHosts,
                ] + extra)
            #expect(refused.code == 1, "\(refused.stdout)\(refused.stderr)")
            #expect(
                refused.stderr.contains(
                    "changed host key: \(server.address) offers its ssh-ed25519 key \(server.fingerprint), not the key \(knownHosts) has for it"
                ),
                "\(refused.stderr)")
        }
        #expect(try String(contentsOfFile: knownHosts, encoding: .utf8) == server.otherHostKeyLine + "\n")
        #expect(server.logins == 0)
    }

    /// A key the server does not accept: the refusal names the key and the user; not retried.
    @Test func aWrongUserKeyIsRefusedNamingTheKeyAndTheUser() async throws {
        let server = try SSHServer()
        defer { server.stop() }
        let hash = try server.serve("f.txt", Array("for the right key\n".utf8))
        let directory = TemporaryDirectory()
        let wrong = directory.path + "/wrong_key"
        let keygen = try ChildProcess("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", wrong])
        keygen.waitUntilExit()
        let manifest = directory.write(
            "m.yaml", "version: 1\nentries:\n  - url: \(server.url("f.txt", user: "root"))\n    hash: sha256:\(hash)\n")
        let report = directory.path + "/r.json"
        let refused = try await WorkerBinary.run(
            [
                "sync", manifest, "--cache-dir", directory.path + "/c", "--report", report, "--ssh-key", wrong,
                "--ssh-known-hosts", server.knownHosts,
            ], environment: ["SSH_AUTH_SOCK": ""])
        #expect(refused.code == 1, "\(refused.stdout)\(refused.stderr)")
        #expect(refused.stderr.contains("login refused: \(server.address) did not accept the key \(wrong) for root"), "\(refused.stderr)")
        let rows = try Self.rows(report)
        #expect(rows.count == 1 && rows.values.first?["attempts"] as? Int == 1, "\(rows)")
    }

    /// A transfer cut in the middle resumes where it stopped: the report's bytes are the file's
    /// once, over two attempts. A file missing on the server is said so, not retried.
    @Test func aCutTransferResumesAndAMissingFileIsNamed() async throws {
        let server = try SSHServer()
        defer { server.stop() }
        var generator = SplitMix64(seed: 81)
        let bytes = (0..<12_000_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let hash = try server.serve("large.bin", bytes)
        let directory = TemporaryDirectory()
        let manifest = directory.write(
            "m.yaml",
            "version: 1\nentries:\n  - url: \(server.url("large.bin"))\n    hash: sha256:\(hash)\n"
                + "  - url: \(server.url("missing.bin"))\n    hash: sha256:\(String(repeating: "1", count: 64))\n")
        let report = directory.path + "/r.json"
        let log = directory.path + "/run.log"
        // Cut once a sixth has arrived.
        server.cutConnections(onceBodiesIn: directory.path + "/c", reach: 2_000_000)
        let run = try WorkerBinary.spawn(
            ["sync", manifest, "--cache-dir", directory.path + "/c", "--report", report, "--limit-rate", "3M"]
                + Self.login(server), log: log)
        await run.exited()
        let said = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(run.terminationStatus == 1, "\(said)")
        let rows = try Self.rows(report)
        let large = rows[server.url("large.bin")]
        #expect(large?["status"] as? String == "added", "\(said)")
        #expect(large?["attempts"] as? Int == 2, "\(String(describing: large))")
        #expect(large?["bytes"] as? Int == bytes.count, "resumed bodies are counted once: \(String(describing: large))")
        let missing = rows[server.url("missing.bin")]
        let error = missing?["error"] as? String ?? ""
        #expect(error.contains("no such file on \(server.address): \(server.root)/missing.bin"), "\(String(describing: missing))")
        #expect(missing?["attempts"] as? Int == 1)
    }

    /// A part kept from a cut run is of the file as it was: once the file has changed (its
    /// time), the next run starts it again rather than splice the old part onto the new rest —
    /// its bytes are the new file's once.
    @Test func aKeptPartOfAnOlderVersionIsNotSplicedOntoTheNewOne() async throws {
        let server = try SSHServer()
        defer { server.stop() }
        var generator = SplitMix64(seed: 82)
        let old = (0..<8_000_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let new = (0..<8_000_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let directory = TemporaryDirectory()
        let cache = directory.path + "/c", report = directory.path + "/r.json"
        let oldManifest = directory.write(
            "old.yaml", "version: 1\nentries:\n  - url: \(server.url("f.bin"))\n    hash: sha256:\(try server.serve("f.bin", old))\n")
        server.cutConnections(onceBodiesIn: cache, reach: 2_000_000)
        let run = try WorkerBinary.spawn(
            ["sync", oldManifest, "--cache-dir", cache, "--retries", "0", "--limit-rate", "2M"] + Self.login(server),
            log: directory.path + "/run.log")
        await run.exited()
        #expect(run.terminationStatus == 1, "\((try? String(contentsOfFile: directory.path + "/run.log", encoding: .utf8)) ?? "")")
        let newHash = try server.serve("f.bin", new)
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(120)], ofItemAtPath: server.root + "/f.bin")
        let newManifest = directory.write(
            "new.yaml", "version: 1\nentries:\n  - url: \(server.url("f.bin"))\n    hash: sha256:\(newHash)\n")
        let synced = try await WorkerBinary.run(["sync", newManifest, "--cache-dir", cache, "--report", report] + Self.login(server))
        #expect(synced.code == 0, "\(synced.stdout)\(synced.stderr)")
        let row = try Self.rows(report)[server.url("f.bin")]
        #expect(row?["status"] as? String == "added" && row?["bytes"] as? Int == new.count, "\(String(describing: row))")
    }

    /// `--rewrite` sends an sftp:// host to the loopback server (the listed host never asked),
    /// `--rewrite-strict` refuses one no rule covers before any request, and a mirror on SFTP
    /// serves an entry whose own server is down, said aloud.
    @Test func rewritesStrictRewritesAndMirrorsApplyToSFTP() async throws {
        let server = try SSHServer()
        defer { server.stop() }
        let hash = try server.serve("f.txt", Array("rewritten\n".utf8))
        let directory = TemporaryDirectory()
        let listed = "sftp://files.example.net/srv/f.txt"
        let manifest = directory.write("m.yaml", "version: 1\nentries:\n  - url: \(listed)\n    hash: sha256:\(hash)\n")
        let report = directory.path + "/r.json"
        let rule = "sftp://files.example.net/srv/=sftp://\(server.address)\(server.root)/"
        let rewritten = try await WorkerBinary.run(
            [
                "sync", manifest, "--cache-dir", directory.path + "/c", "--rewrite", rule, "--rewrite-strict",
                "--report", report,
            ] + Self.login(server))
        #expect(rewritten.code == 0, "\(rewritten.stdout)\(rewritten.stderr)")
        #expect(try Self.rows(report)[listed]?["status"] as? String == "added")
        let other = directory.write("o.yaml", "version: 1\nentries:\n  - url: sftp://other.example.net/f.txt\n    hash: sha256:\(hash)\n")
        let strict = try await WorkerBinary.run(
            ["sync", other, "--cache-dir", directory.path + "/c2", "--rewrite", rule, "--rewrite-strict"]
                + Self.login(server))
        #expect(strict.code == 2, "\(strict.stdout)\(strict.stderr)")
        #expect(strict.stderr.contains("sftp://other.example.net"), "\(strict.stderr)")
        #expect(server.logins == 1)
        let refusing = RefusingPort()
        let mirrored = directory.write(
            "mirrored.yaml",
            """
            version: 1
            entries:
              - url: sftp://127.0.0.1:\(refusing.port)/srv/f.txt
                hash: sha256:\(hash)
                mirrors: ["\(server.url("f.txt"))"]
            """)
        let failover = try await WorkerBinary.run(
            [
                "sync", mirrored, "--cache-dir", directory.path + "/c3", "--retries", "0",
                "--report", report,
            ] + Self.login(server))
        #expect(failover.code == 0, "\(failover.stdout)\(failover.stderr)")
        #expect((failover.stdout + failover.stderr).contains("failover"), "\(failover.stdout)\(failover.stderr)")
        #expect(try Self.rows(report)["sftp://127.0.0.1:\(refusing.port)/srv/f.txt"]?["served_by"] as? String == server.url("f.txt"))
    }

    /// `worker manifest sftp://HOST/FOLDER/` lists the folder below it and pins each file by a
    /// download; run again, it asks only about the file whose size and time changed and the new
    /// one; the manifest it writes syncs.
    @Test func aFolderIsListedIntoAManifestAndARerunAsksOnlyAboutChangedFiles() async throws {
        let server = try SSHServer()
        defer { server.stop() }
        try server.serve("set/one.txt", Array("one\n".utf8))
        try server.serve("set/deep/two.txt", Array("two\n".utf8))
        try server.serve("set/with space.txt", Array("three\n".utf8))
        let directory = TemporaryDirectory()
        let cache = directory.path + "/c", output = directory.path + "/set.yaml"
        let folder = "sftp://\(server.address)\(server.root)/set/"
        let first = try await WorkerBinary.run(["manifest", folder, "--cache-dir", cache, "-o", output] + Self.login(server))
        #expect(first.code == 0, "\(first.stdout)\(first.stderr)")
        #expect(first.stderr.contains("3 files under \(folder): 0 unchanged since the last run"), "\(first.stderr)")
        let written = try String(contentsOfFile: output, encoding: .utf8)
        #expect(
            written.contains("url: \"with%20space.txt\"") && written.contains("url: \"deep/two.txt\"")
                && written.contains("hash: sha256:\(sha256(Array("two\n".utf8)))"), "\(written)")
        try server.serve("set/one.txt", Array("one, longer\n".utf8))
        try server.serve("set/new.txt", Array("new\n".utf8))
        let again = try await WorkerBinary.run(["manifest", folder, "--cache-dir", cache, "-o", output] + Self.login(server))
        #expect(again.code == 0, "\(again.stdout)\(again.stderr)")
        #expect(
            again.stderr.contains("4 files under \(folder): 2 unchanged since the last run")
                && again.stderr.contains("2 downloaded and hashed"),
            "\(again.stderr)")
        let synced = try await WorkerBinary.run(["sync", output, "--cache-dir", directory.path + "/c2"] + Self.login(server))
        #expect(synced.code == 0 && synced.stdout.contains("added 4"), "\(synced.stdout)\(synced.stderr)")
    }
}
