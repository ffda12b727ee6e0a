import Foundation
import Glibc
import Synchronization
import Testing
import WorkerTestSupport

/// A fleet that follows one publisher, through the binary: a remote manifest keeps the promises a
/// local one keeps (its `base_url`, its cost, its documents that are not entries) and never reads
/// the runner's environment; a signed one is bound to its name and its serial to that name and
/// key wherever it is read from; the kept copy and the signatures are checked before they serve.
@Suite(.hangLimit) struct RemoteManifestTests {
    typealias Publisher = SignedManifestTests.Publisher

    /// `base_url` of a remote manifest is where its relative entries are, not the manifest's folder.
    @Test func aRemoteManifestsBaseURLIsHonoured() async throws {
        let publisher = try await Publisher()
        publisher.directory.write("www/elsewhere/a.txt", "a\n")
        publisher.directory.write(
            "www/avatars.yaml",
            """
            version: 1
            base_url: http://127.0.0.1:\(publisher.server.port)/elsewhere/
            entries:
              - url: a.txt
                hash: sha256:\(sha256("a\n"))

            """)
        let synced = try await WorkerBinary.run(["sync", publisher.url, "--cache-dir", publisher.cache, "--progress", "never"])
        #expect(synced.code == 0, "\(synced.stdout) \(synced.stderr)")
        #expect(publisher.server.requests.map(\.path).contains("/elsewhere/a.txt"), "\(publisher.server.requests)")
        #expect(!publisher.server.requests.map(\.path).contains("/a.txt"))
    }

    /// `${VAR}` in a remote manifest reads only the variables named by `--manifest-env`: any other
    /// is a located error (exit 2) before any entry is asked for; a local manifest expands as before.
    @Test func aRemoteManifestReadsOnlyTheVariablesTheOperatorNames() async throws {
        let publisher = try await Publisher()
        publisher.directory.write("www/files/a.txt", "a\n")
        let yaml = """
            version: 1
            name: avatars
            headers:
              X-Stolen: "${WORKER_TEST_SECRET}"
            entries:
              - url: files/a.txt
                hash: sha256:\(sha256("a\n"))

            """
        publisher.directory.write("www/avatars.yaml", yaml)
        let environment = ["WORKER_TEST_SECRET": "s3cr3t-value"]
        let refused = try await WorkerBinary.run(
            ["sync", publisher.url, "--cache-dir", publisher.cache, "--progress", "never"],
            environment: environment)
        #expect(refused.code == 2, "\(refused.stderr)")
        #expect(
            refused.stderr.contains("\(publisher.url):4:13: header 'X-Stolen': a remote manifest reads no environment variable"),
            "\(refused.stderr)")
        #expect(refused.stderr.contains("--manifest-env WORKER_TEST_SECRET"), "\(refused.stderr)")
        #expect(!refused.stderr.contains("s3cr3t"))
        #expect(publisher.fileRequests(after: 0).isEmpty, "no entry was asked for")

        let named = try await WorkerBinary.run(
            [
                "sync", publisher.url, "--cache-dir", publisher.cache, "--progress", "never",
                "--manifest-env", "WORKER_TEST_SECRET",
            ], environment: environment)
        #expect(named.code == 0, "\(named.stderr)")
        #expect(publisher.fileRequests(after: 0).count == 1)

        // A local manifest reads the environment as it always did.
        let local = publisher.directory.write(
            "local/avatars.yaml",
            yaml.replacingOccurrences(
                of: "files/a.txt", with: "http://127.0.0.1:\(publisher.server.port)/files/a.txt"))
        let synced = try await WorkerBinary.run(
            ["sync", local, "--cache-dir", publisher.cache + "-local", "--progress", "never"],
            environment: environment)
        #expect(synced.code == 0, "\(synced.stderr)")
    }

    /// A changed manifest costs one GET of it and one of its signature; the manifest and its
    /// signature are not entries (`status`, the orphans), and `status` names the manifest's URL.
    @Test func aChangedManifestCostsOneRequestOfItAndOneOfItsSignature() async throws {
        let publisher = try await Publisher()
        try await publisher.publish(["a.txt": "a\n", "b.txt": "b\n"], header: "serial: 1\n")
        #expect(try await publisher.sync().code == 0)
        try await publisher.publish(["a.txt": "a, changed\n", "b.txt": "b\n"], header: "serial: 22\n")
        let seen = publisher.server.requests.count
        let changed = try await publisher.sync()
        #expect(changed.code == 0, "\(changed.stderr)")
        #expect(changed.stdout.contains("updated 1"), "\(changed.stdout)")
        #expect(!changed.stdout.contains("named by no given manifest"), "the documents are not orphans: \(changed.stdout)")
        let asked = publisher.server.requests.dropFirst(seen).map(\.path)
        #expect(asked.filter { $0 == "/avatars.yaml" }.count == 1, "\(asked)")
        #expect(asked.filter { $0 == "/avatars.yaml.minisig" }.count == 1, "\(asked)")

        let warm = try await publisher.sync()
        #expect(warm.code == 0)
        #expect(!warm.stdout.contains("named by no given manifest"), "\(warm.stdout)")
        let status = try await WorkerBinary.run(["status", "--cache-dir", publisher.cache])
        #expect(status.code == 0, "\(status.stderr)")
        #expect(status.stdout.contains("entries    2 "), "\(status.stdout)")
        #expect(status.stdout.contains("(\(publisher.url))"), "\(status.stdout)")
        #expect(!status.stdout.contains("http:/127"), "\(status.stdout)")
    }

    /// Mix-and-match: another manifest, validly signed by the same key, served in this one's place
    /// is refused — by the file name minisign's trusted comment names, and by its `name:`.
    @Test func anotherSignedManifestServedInItsPlaceIsRefused() async throws {
        let publisher = try await Publisher()
        try await publisher.publish(["a.txt": "a\n"])
        #expect(try await publisher.sync().code == 0)
        let models = publisher.directory.write(
            "models/models.yaml",
            "version: 1\nname: models\nentries:\n  - url: http://127.0.0.1:1/m.bin\n")
        // Signed as models.yaml (minisign's default trusted comment names the file).
        _ = try await Publisher.tool("/usr/bin/minisign", ["-S", "-s", publisher.directory.path + "/key.sec", "-m", models])
        try FileManager.default.removeItem(atPath: publisher.www + "/avatars.yaml")
        try FileManager.default.removeItem(atPath: publisher.www + "/avatars.yaml.minisig")
        try FileManager.default.copyItem(atPath: models, toPath: publisher.www + "/avatars.yaml")
        try FileManager.default.copyItem(atPath: models + ".minisig", toPath: publisher.www + "/avatars.yaml.minisig")
        let byFile = try await publisher.sync(["--prune"])
        #expect(byFile.code == 2, "\(byFile.stderr)")
        #expect(byFile.stderr.contains("signed as 'models.yaml'"), "\(byFile.stderr)")
        #expect(byFile.stderr.contains("bound to its name"), "\(byFile.stderr)")
        // Signed with a comment of the publisher's own: its `name:` still gives it away.
        try FileManager.default.removeItem(atPath: publisher.www + "/avatars.yaml.minisig")
        _ = try await Publisher.tool(
            "/usr/bin/minisign",
            [
                "-S", "-s", publisher.directory.path + "/key.sec",
                "-m", publisher.www + "/avatars.yaml", "-t", "release",
            ])
        let byName = try await publisher.sync(["--prune"])
        #expect(byName.code == 2, "\(byName.stderr)")
        #expect(byName.stderr.contains(":2:7: name 'models' is not the name it is read as ('avatars.yaml')"), "\(byName.stderr)")
        let path = try await WorkerBinary.run([
            "path", "http://127.0.0.1:\(publisher.server.port)/files/a.txt",
            "--cache-dir", publisher.cache,
        ])
        #expect(path.code == 0, "the avatars were not pruned: \(path.stderr)")
    }

    /// The serial is kept per name and key, not per URL as typed: another spelling of the
    /// publisher's URL (its host's case, a query) serves no rollback.
    @Test func aSerialIsKeptWhateverTheURLsSpelling() async throws {
        let publisher = try await Publisher()
        try await publisher.publish(["a.txt": "a, 200\n"], header: "serial: 200\n")
        #expect(try await publisher.sync().code == 0)
        try await publisher.publish(["a.txt": "a, 50\n"], header: "serial: 50\n")
        for spelling in [
            "http://LOCALHOST:\(publisher.server.port)/avatars.yaml",
            "http://127.0.0.1:\(publisher.server.port)/avatars.yaml?v=2",
        ] {
            let replayed = try await WorkerBinary.run([
                "sync", spelling, "--cache-dir", publisher.cache, "--trusted-keys",
                publisher.publicKey, "--progress", "never",
            ])
            #expect(replayed.code == 2, "\(spelling): \(replayed.stderr)")
            #expect(replayed.stderr.contains("serial 50 is lower than 200"), "\(spelling): \(replayed.stderr)")
        }
        #expect(publisher.fileRequests(after: 0).count == 1, "only serial 200's file was fetched")
    }

    /// The copy accepted before serves only as it was accepted: not through a link another user
    /// planted, not with other bytes; and it is the owner's alone to write, whatever the umask.
    @Test func theKeptCopyServesOnlyAsItWasAccepted() async throws {
        let publisher = try await Publisher()
        try await publisher.publish(["a.txt": "a\n"])
        let first = try await WorkerBinary.run(
            [
                "-c", "umask 000; exec \"$0\" \"$@\"", WorkerBinary.path, "sync", publisher.url,
                "--cache-dir", publisher.cache, "--trusted-keys", publisher.publicKey,
            ],
            executable: "/bin/bash")
        #expect(first.code == 0, "\(first.stderr)")
        let folder = publisher.cache + "/manifests"
        var info = stat()
        #expect(
            stat(folder, &info) == 0 && info.st_mode & 0o022 == 0, "manifests/ is the owner's to write: \(String(info.st_mode, radix: 8))")
        let copies = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".yaml") }
        let copy = folder + "/" + (try #require(copies.first))
        #expect(stat(copy, &info) == 0 && info.st_mode & 0o022 == 0, "\(String(info.st_mode, radix: 8))")
        publisher.server.stop()
        #expect(try await publisher.sync().code == 0, "the copy serves while the publisher is down")

        // Other bytes in the copy: refused as no copy.
        let accepted = try String(contentsOfFile: copy, encoding: .utf8)
        try (accepted + "  - url: files/evil.txt\n").write(toFile: copy, atomically: false, encoding: .utf8)
        let changed = try await publisher.sync()
        #expect(changed.code == 3, "\(changed.stderr)")
        #expect(changed.stderr.contains("no copy of it was accepted before"), "\(changed.stderr)")
        // A link in its place: never read through.
        let planted = publisher.directory.write("planted.yaml", accepted)
        try FileManager.default.removeItem(atPath: copy)
        try FileManager.default.createSymbolicLink(atPath: copy, withDestinationPath: planted)
        let linked = try await publisher.sync()
        #expect(linked.code == 3, "\(linked.stderr)")
    }

    /// Under `--refresh-unpinned` (a cache restored from somewhere the run cannot vouch for), an
    /// unsigned remote manifest's kept copy does not serve while its publisher is down (exit 3,
    /// said); a signed one, checked against today's keys, still does; without the flag the
    /// unsigned reading serves the copy as before.
    @Test func anUnsignedKeptCopyDoesNotServeUnderRefreshUnpinned() async throws {
        let publisher = try await Publisher()
        try await publisher.publish(["a.txt": "a\n"])
        let first = try await publisher.sync()
        #expect(first.code == 0, "\(first.stderr)")
        publisher.server.stop()
        let plain = ["sync", publisher.url, "--cache-dir", publisher.cache, "--progress", "never"]
        let refused = try await WorkerBinary.run(plain + ["--refresh-unpinned"])
        #expect(refused.code == 3, "\(refused.stdout)\(refused.stderr)")
        #expect(refused.stderr.contains("the copy accepted before is unsigned, and not used under --refresh-unpinned"), "\(refused.stderr)")
        let served = try await WorkerBinary.run(plain)
        #expect(served.code == 0, "\(served.stderr)")
        #expect(served.stderr.contains("using the copy accepted"), "\(served.stderr)")
        let signed = try await publisher.sync(["--refresh-unpinned"])
        #expect(signed.code == 0, "\(signed.stderr)")
    }

    /// A signature document is at most 64 KiB, and a signature that is refused is not kept.
    @Test func aLargeOrRefusedSignatureIsNeverKept() async throws {
        let publisher = try await Publisher()
        try await publisher.publish(["a.txt": "a\n"])
        let signature = publisher.www + "/avatars.yaml.minisig"
        let good = try String(contentsOfFile: signature, encoding: .utf8)
        publisher.directory.write("www/avatars.yaml.minisig", good + String(repeating: "x", count: 100_000) + "\n")
        let large = try await publisher.sync()
        #expect(large.code == 2, "\(large.stderr)")
        #expect(large.stderr.contains("not signed"), "\(large.stderr)")
        let sigURL = publisher.url + ".minisig"
        let notKept = try await WorkerBinary.run(["path", sigURL, "--cache-dir", publisher.cache])
        #expect(notKept.code != 0, "the large signature is not in the cache: \(notKept.stdout)")

        // Its trusted comment edited: minisign's global signature refuses it, and it is not kept.
        var lines = good.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        lines[2] = "trusted comment: avatars, edited"
        publisher.directory.write("www/avatars.yaml.minisig", lines.joined(separator: "\n"))
        let edited = try await publisher.sync()
        #expect(edited.code == 2, "\(edited.stderr)")
        #expect(edited.stderr.contains("(its trusted comment)"), "\(edited.stderr)")
        let refused = try await WorkerBinary.run(["path", sigURL, "--cache-dir", publisher.cache])
        #expect(refused.code != 0, "the refused signature is not kept: \(refused.stdout)")
        #expect(publisher.fileRequests(after: 0).isEmpty)
    }

    /// A publisher replaces two files one after the other: a reader that finds the new manifest
    /// with the old signature asks again once, with the manifest, and takes the pair. (The
    /// publisher's files are served by a scripted origin: the second signature is the answer to
    /// the second request, however long the reader took to make it.)
    @Test func aSignatureThatFailsRightAfterAChangeIsAskedAgainOnce() async throws {
        let publisher = try await Publisher()
        func published() throws -> (manifest: [UInt8], signature: [UInt8]) {
            (
                [UInt8](try Data(contentsOf: URL(fileURLWithPath: publisher.www + "/avatars.yaml"))),
                [UInt8](try Data(contentsOf: URL(fileURLWithPath: publisher.www + "/avatars.yaml.minisig")))
            )
        }
        try await publisher.publish(["a.txt": "a\n"], header: "serial: 1\n")
        let first = try published()
        try await publisher.publish(["a.txt": "a, changed\n"], header: "serial: 2\n")
        let second = try published()
        func ok(_ body: [UInt8]) -> RawOrigin.Answer {
            RawOrigin.Answer("HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n", body: body)
        }
        let origin = try RawOrigin()
        defer { origin.stop() }
        origin.script("/avatars.yaml", [ok(first.manifest), ok(second.manifest)])
        // The second run finds the new manifest beside the old signature; the new one has landed
        // when it asks again.
        origin.script("/avatars.yaml.minisig", [ok(first.signature), ok(first.signature), ok(second.signature)])
        origin.script("/files/a.txt", [ok(Array("a\n".utf8)), ok(Array("a, changed\n".utf8))])
        let arguments = [
            "sync", origin.url("/avatars.yaml"), "--cache-dir", publisher.cache, "--trusted-keys", publisher.publicKey,
            "--progress", "never",
        ]
        let accepted = try await WorkerBinary.run(arguments)
        #expect(accepted.code == 0, "\(accepted.stderr)")
        let synced = try await WorkerBinary.run(arguments)
        #expect(synced.code == 0, "\(synced.stderr)")
        #expect(synced.stdout.contains("updated 1"), "\(synced.stdout)")
        #expect(origin.hits("/avatars.yaml.minisig") == 3, "the second run asked again once: \(origin.hits("/avatars.yaml.minisig"))")
        #expect(origin.hits("/avatars.yaml") == 3, "with the manifest")

        // A signature that still fails is asked again once, not more, and refused.
        origin.script("/avatars.yaml", [ok(first.manifest)])
        origin.script("/avatars.yaml.minisig", [ok(second.signature)])
        let before = origin.hits("/avatars.yaml.minisig")
        let refused = try await WorkerBinary.run(arguments)
        #expect(refused.code == 2, "\(refused.stderr)")
        #expect(refused.stderr.contains("does not match"), "\(refused.stderr)")
        #expect(origin.hits("/avatars.yaml.minisig") - before == 2)
    }

    /// An expired copy never serves, on any path that serves one: the signature beside it and
    /// one named by `--signature URL`. (That a newer signed manifest ends the expiry is a column
    /// of `ManifestPromiseMatrixTests`.)
    @Test(arguments: [false, true]) func anExpiredCopyNeverServes(namedSignature: Bool) async throws {
        let publisher = try await Publisher()
        let extra = namedSignature ? ["--signature", "http://127.0.0.1:\(publisher.server.port)/named.minisig"] : []
        let expiries = Mutex<Date?>(nil)
        // Signed once the run has its slot (however long the suite's other runs keep it waiting),
        // to expire well after it starts.
        let first = try await publisher.sync(extra) {
            let expiry = Date(timeIntervalSinceNow: 15)
            expiries.withLock { $0 = expiry }
            try await publisher.publish(
                ["a.txt": "a\n"], header: "serial: 1\nexpires: \"\(expiry.formatted(Date.ISO8601FormatStyle()))\"\n",
                takingSlot: false)
            if namedSignature {
                try FileManager.default.moveItem(atPath: publisher.www + "/avatars.yaml.minisig", toPath: publisher.www + "/named.minisig")
            }
        }
        let expiry = try #require(expiries.withLock { $0 })
        #expect(first.code == 0, "\(first.stderr)")
        try await Task.sleep(nanoseconds: UInt64(max(0, expiry.timeIntervalSinceNow + 1.1) * 1e9))
        publisher.server.stop()
        let down = try await publisher.sync(extra)
        #expect(down.code == 2, "\(down.stderr)")
        #expect(down.stderr.contains("expired at"), "\(down.stderr)")
    }
}

/// A manifest's `name` reaches stdout on one line: a line break in it adds no line (GitHub's
/// workflow commands, a forged summary line).
@Suite struct ManifestNameOutputTests {
    @Test func aNameWithALineBreakStaysOnItsLine() async throws {
        let directory = TemporaryDirectory()
        directory.write("site/a.txt", "a\n")
        let manifest = directory.write("site/m.yaml", "version: 1\nname: \"m\\n::warning::forged\"\nentries:\n  - url: a.txt\n")
        let synced = try await WorkerBinary.run(["sync", manifest, "--cache-dir", directory.path + "/cache"])
        #expect(synced.code == 0, "\(synced.stderr)")
        #expect(!(synced.stdout + synced.stderr).split(separator: "\n").contains { $0.hasPrefix("::") }, "\(synced.stdout)")
        let status = try await WorkerBinary.run(["status", "--cache-dir", directory.path + "/cache"])
        #expect(status.code == 0, "\(status.stderr)")
        #expect(!status.stdout.split(separator: "\n").contains { $0.hasPrefix("::") }, "\(status.stdout)")
    }
}
