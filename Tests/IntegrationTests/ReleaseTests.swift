import Foundation
import Testing
import WorkerTestSupport

/// A release as the maintainers make one — scripts/release-rehearsal.sh: a clean clone at a tag
/// vVERSION, throwaway keys whose public halves are committed, scripts/release.sh, the release's
/// lines committed to packaging/release-checksums.txt — checked as its users check it: SHA256SUMS
/// with `minisign -V` and `ssh-keygen -Y verify`, the release manifest with worker's own verifier,
/// and the action's `version:` input installing the package from the clone's commit.
/// CI makes the rehearsal before the suite (its binary is the one the suite runs) and names it in
/// WORKER_RELEASE_REHEARSAL; elsewhere the suite makes one in .build-release-rehearsal/.
@Suite(.hangLimit, .serialized) struct ReleaseTests {
    /// The rehearsal's clone (its release in dist/), made once per test process.
    static let rehearsal: Task<String, any Error> = Task {
        if let given = ProcessInfo.processInfo.environment["WORKER_RELEASE_REHEARSAL"], !given.isEmpty { return given }
        let clone = ActionTests.repository + "/.build-release-rehearsal/clone"
        let made = try await WorkerBinary.run(
            [ActionTests.repository + "/scripts/release-rehearsal.sh", clone],
            directory: ActionTests.repository, executable: "/bin/bash", seconds: 1_800,
            takingSlot: false)
        guard made.code == 0 else {
            throw RehearsalFailed(output: made.stdout + made.stderr)
        }
        return clone
    }

    struct RehearsalFailed: Error, CustomStringConvertible {
        let output: String
        var description: String { "scripts/release-rehearsal.sh failed:\n\(output)" }
    }

    static var version: String {
        get throws {
            let source = try String(contentsOfFile: ActionTests.repository + "/Sources/WorkerSupport/WorkerVersion.swift", encoding: .utf8)
            return try #require(source.split(separator: "\"").dropFirst().first.map(String.init))
        }
    }

    static func run(
        _ executable: String, _ arguments: [String], stdin: String? = nil, directory: String? = nil
    ) async throws
        -> WorkerBinary.Result
    {
        guard let stdin else {
            return try await WorkerBinary.run(arguments, directory: directory, executable: executable, takingSlot: false)
        }
        let folder = TemporaryDirectory()
        let input = folder.write("stdin", stdin)
        let result = try await WorkerBinary.run(
            ["-c", "exec \"$0\" \"$@\" <\"$WORKER_TEST_STDIN\"", executable] + arguments,
            environment: ["WORKER_TEST_STDIN": input], directory: directory,
            executable: "/bin/sh", takingSlot: false)
        withExtendedLifetime(folder) {}
        return result
    }

    /// SHA256SUMS verifies with both tools against the committed public keys and lists the two
    /// files by their hashes; one byte changed and both refuse it. The tarball holds the binary
    /// (the package's, byte for byte), the manual and the completions.
    @Test func theChecksumsVerifyWithMinisignAndSSH() async throws {
        let clone = try await Self.rehearsal.value
        let version = try Self.version
        let dist = clone + "/dist"
        let keys = clone + "/packaging/release-keys"
        let sums = try String(contentsOfFile: dist + "/SHA256SUMS", encoding: .utf8)
        let names = sums.split(separator: "\n").map { $0.split(separator: " ").last.map(String.init) ?? "" }
        #expect(names.count == 2 && Set(names) == ["worker-\(version)-linux-x86_64.tar.gz", "worker_\(version)_amd64.deb"], "\(sums)")

        let minisign = try await Self.run("/usr/bin/minisign", ["-V", "-p", keys + "/minisign.pub", "-m", dist + "/SHA256SUMS"])
        #expect(minisign.code == 0, "\(minisign.stdout)\(minisign.stderr)")
        #expect(minisign.stdout.contains("worker \(version) SHA256SUMS"), "the trusted comment names the release: \(minisign.stdout)")
        let ssh = try await Self.run(
            "/usr/bin/ssh-keygen",
            [
                "-Y", "verify", "-f", keys + "/allowed_signers",
                "-I", "releases@worker.example.org", "-n", "file",
                "-s", dist + "/SHA256SUMS.sig",
            ], stdin: sums)
        #expect(ssh.code == 0, "\(ssh.stdout)\(ssh.stderr)")
        let check = try await Self.run("/usr/bin/sha256sum", ["--check", "--strict", "SHA256SUMS"], directory: dist)
        #expect(check.code == 0, "\(check.stdout)\(check.stderr)")

        // One digit changed: a list that names other bytes.
        let directory = TemporaryDirectory()
        var edited = Array(sums.utf8)
        edited[0] = edited[0] == UInt8(ascii: "0") ? UInt8(ascii: "1") : UInt8(ascii: "0")
        let forged = directory.write("SHA256SUMS", String(decoding: edited, as: UTF8.self))
        try FileManager.default.copyItem(atPath: dist + "/SHA256SUMS.minisig", toPath: forged + ".minisig")
        let refusedMinisign = try await Self.run("/usr/bin/minisign", ["-V", "-p", keys + "/minisign.pub", "-m", forged])
        #expect(refusedMinisign.code != 0)
        let refusedSSH = try await Self.run(
            "/usr/bin/ssh-keygen",
            [
                "-Y", "verify", "-f", keys + "/allowed_signers",
                "-I", "releases@worker.example.org", "-n", "file",
                "-s", dist + "/SHA256SUMS.sig",
            ],
            stdin: String(decoding: edited, as: UTF8.self))
        #expect(refusedSSH.code != 0)

        let unpacked = directory.path + "/unpacked"
        try FileManager.default.createDirectory(atPath: unpacked, withIntermediateDirectories: true)
        let tar = try await Self.run("/usr/bin/tar", ["-xzf", dist + "/worker-\(version)-linux-x86_64.tar.gz", "-C", unpacked])
        #expect(tar.code == 0, "\(tar.stderr)")
        let root = unpacked + "/worker-\(version)-linux-x86_64"
        for file in [
            "bin/worker", "share/man/man1/worker.1", "share/bash-completion/completions/worker",
            "share/zsh/site-functions/_worker", "share/fish/vendor_completions.d/worker.fish",
        ] {
            #expect(FileManager.default.fileExists(atPath: root + "/" + file), "the tarball has no \(file)")
        }
        let said = try await Self.run(root + "/bin/worker", ["--version"])
        #expect(said.stdout.trimmingCharacters(in: .whitespacesAndNewlines).hasSuffix(version), "\(said.stdout)")
        let package = directory.path + "/package"
        let extracted = try await Self.run("/usr/bin/dpkg-deb", ["-x", dist + "/worker_\(version)_amd64.deb", package])
        #expect(extracted.code == 0, "\(extracted.stderr)")
        #expect(
            FileManager.default.contents(atPath: package + "/usr/bin/worker") == FileManager.default.contents(atPath: root + "/bin/worker"),
            "the package and the tarball ship different binaries")
    }

    /// The release manifest, synced by worker with the release keys (minisign, then SSH's allowed
    /// signers), from a mirror of the release's folder (`--rewrite`): each file downloaded and
    /// checked, into a tree; an edited manifest is refused (exit 2) and nothing is published.
    @Test func worksOwnVerifierFetchesTheReleaseFromItsSignedManifest() async throws {
        let clone = try await Self.rehearsal.value
        let version = try Self.version
        let dist = clone + "/dist"
        let origin = try await TestOrigin.start()
        defer { Task { await origin.stop() } }
        let files = ["worker_\(version)_amd64.deb", "worker-\(version)-linux-x86_64.tar.gz"]
        for file in files {
            origin.set("/mirror/" + file, Array(try Data(contentsOf: URL(fileURLWithPath: dist + "/" + file))))
        }
        let manifestText = try String(contentsOfFile: dist + "/worker-\(version).yaml", encoding: .utf8)
        let baseURL = try #require(
            manifestText.split(separator: "\n").first { $0.hasPrefix("base_url:") }?
                .dropFirst("base_url:".count).trimmingCharacters(in: CharacterSet(charactersIn: " \"'")))
        let directory = TemporaryDirectory()
        for (number, keys) in [(1, clone + "/packaging/release-keys/minisign.pub"), (2, clone + "/packaging/release-keys/allowed_signers")]
        {
            let tree = directory.path + "/tree-\(number)"
            let run = try await WorkerBinary.run([
                "sync", dist + "/worker-\(version).yaml", "--trusted-keys", keys,
                "--rewrite", "\(baseURL)=\(origin.url("/mirror/"))",
                "--cache-dir", directory.path + "/cache-\(number)", "--tree", tree,
            ])
            #expect(run.code == 0, "\(run.stdout)\(run.stderr)")
            for file in files {
                #expect(
                    FileManager.default.contents(atPath: tree + "/" + file) == FileManager.default.contents(atPath: dist + "/" + file),
                    "\(file) in the tree is not the release's")
            }
        }

        let forged = directory.path + "/forged"
        try FileManager.default.createDirectory(atPath: forged, withIntermediateDirectories: true)
        for suffix in ["", ".minisig", ".sig"] {
            try FileManager.default.copyItem(
                atPath: dist + "/worker-\(version).yaml" + suffix,
                toPath: forged + "/worker-\(version).yaml" + suffix)
        }
        let edited = manifestText.replacingOccurrences(of: "worker_\(version)_amd64.deb", with: "worker_\(version)_amd64.deb?evil")
        #expect(edited != manifestText)
        try edited.write(toFile: forged + "/worker-\(version).yaml", atomically: true, encoding: .utf8)
        let refused = try await WorkerBinary.run([
            "sync", forged + "/worker-\(version).yaml",
            "--trusted-keys", clone + "/packaging/release-keys/minisign.pub",
            "--rewrite", "\(baseURL)=\(origin.url("/mirror/"))",
            "--cache-dir", directory.path + "/cache-forged", "--tree", directory.path + "/tree-forged",
        ])
        #expect(refused.code == 2, "\(refused.stdout)\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/tree-forged/worker_\(version)_amd64.deb"))
    }

    /// The action run from the release's commit installs the version by its `version:` input:
    /// the package is downloaded (from a mirror here, `deb-url`), checked against the SHA-256 that
    /// commit lists in packaging/release-checksums.txt (no `deb-sha256` given), unpacked onto the
    /// job's PATH, and it syncs.
    @Test func theActionInstallsTheReleaseByItsVersion() async throws {
        let clone = try await Self.rehearsal.value
        let version = try Self.version
        let listed = try String(contentsOfFile: clone + "/packaging/release-checksums.txt", encoding: .utf8)
        #expect(listed.contains("  worker_\(version)_amd64.deb"), "\(listed)")
        let status = try await Self.run("/usr/bin/git", ["-C", clone, "status", "--porcelain"])
        #expect(status.stdout.isEmpty, "the release's lines are committed: \(status.stdout)")

        let origin = try await TestOrigin.start()
        defer { Task { await origin.stop() } }
        let deb = "worker_\(version)_amd64.deb"
        origin.set("/releases/" + deb, Array(try Data(contentsOf: URL(fileURLWithPath: clone + "/dist/" + deb))))
        let body = Array("installed from the release\n".utf8)
        origin.set("/f/released.txt", body)
        let directory = TemporaryDirectory()
        let runner = try ActionTests.Runner(directory: directory)
        _ = directory.write(
            "workspace/manifests/a.yaml",
            "version: 1\nname: assets\nentries:\n"
                + "  - url: \(origin.url("/f/released.txt"))\n    hash: sha256:\(sha256(body))\n")
        let run = try await runner.run(
            1, inputs: ["version": version, "deb-url": origin.url("/releases/" + deb)],
            seedBuild: false, action: clone)
        #expect(!run.failed, "\(run.log)")
        #expect(run.outcome("Restore the worker build") == "skipped")
        #expect((run.json["path"] as? [String]) == [run.temp + "/worker-\(version)/usr/bin"])
        #expect(run.log.contains("worker \(version)"), "\(run.log)")
        #expect(run.outputs["added"] == "1")
        #expect(origin.hits("/releases/" + deb) == 1)
    }
}
