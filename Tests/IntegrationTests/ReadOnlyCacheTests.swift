import Foundation
import Glibc
import Testing
import WorkerTestSupport

/// A cache this user may read but not write: another user's (as root the reads run as `nobody`,
/// so the test holds when tests run as root), a read-only mount, a cache shared with a group.
@Suite(.hangLimit) struct ReadOnlyCacheTests {
    /// Runs the binary as `nobody` when the tests run as root (setpriv), else as this user.
    private struct Reader {
        let binary: String
        let asNobody: Bool

        init(_ directory: TemporaryDirectory) throws {
            asNobody = geteuid() == 0
            binary = try WorkerBinary.copyForOtherUsers(into: directory)
        }

        func run(_ arguments: [String]) async throws -> WorkerBinary.Result {
            guard asNobody else { return try await WorkerBinary.run(arguments, executable: binary) }
            return try await WorkerBinary.run(
                ["--reuid=65534", "--regid=65534", "--clear-groups", "--", binary] + arguments,
                executable: "/usr/bin/setpriv")
        }
    }

    /// Every read works in another user's cache; every write says what is not writable, exit 4.
    @Test func aCacheThisUserMayOnlyReadServesEveryRead() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let reader = try Reader(harness.directory)
        let bytes = harness.serve("r")
        let manifest = harness.manifest([("/f/r", bytes), ("/f/s", harness.serve("s"))])
        #expect(try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "-q"]).code == 0)
        let url = harness.origin.url("/f/r")
        let out = harness.directory.path + "/out"
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        chmod(out, 0o777)
        let cache = ["--cache-dir", harness.cache]
        func checkReads(_ label: String) async throws {
            let get = try await reader.run(["get", url] + cache)
            #expect(get.code == 0 && get.stdout.contains(sha256(bytes)), "\(label) get: \(get.stdout) \(get.stderr)")
            #expect(try await reader.run(["path", url] + cache).stdout.contains(sha256(bytes)), "\(label) path")
            let status = try await reader.run(["status"] + cache)
            #expect(status.code == 0 && status.stdout.contains("entries    2"), "\(label) status: \(status.stderr)")
            #expect(try await reader.run(["plan", manifest] + cache).code == 0, "\(label) plan")
            #expect(try await reader.run(["export", "--layout", "hash", out, manifest] + cache).code == 0, "\(label) export")
            let verify = try await reader.run(["verify"] + cache)
            #expect(
                verify.code == 0 && verify.stdout.contains("the cache and its index agree"),
                "\(label) verify: \(verify.stdout) \(verify.stderr)")
            #expect(try await reader.run(["fingerprint", manifest]).code == 0, "\(label) fingerprint")
        }
        func checkWrites(_ label: String, words: String) async throws {
            harness.serve("t")
            let writes: [[String]] = [
                ["sync", manifest], ["get", harness.origin.url("/f/t")], ["gc"], ["rm", url], ["verify", "--repair"],
            ]
            for arguments in writes {
                let result = try await reader.run(arguments + cache)
                #expect(result.code == 4, "\(label) \(arguments[0]): \(result.code) \(result.stderr)")
                #expect(result.stderr.contains(words) && !result.stderr.contains("SQLite"), "\(label) \(arguments[0]): \(result.stderr)")
            }
        }
        if reader.asNobody {
            // Another user's cache whose index is its owner's alone: said in words.
            let private_ = try await reader.run(["status"] + cache)
            #expect(
                private_.code == 4
                    && private_.stderr.contains("cache not readable: \(harness.cache)/index.sqlite is not readable by user nobody")
                    && private_.stderr.contains("mode 0600") && !private_.stderr.contains("SQLite"), "\(private_.stderr)")
            // Another user's cache that its owner let others read.
            #expect(await chmodRecursively(harness.cache, "a+rX"))
            try await checkReads("readable")
            try await checkWrites("readable", words: "is not writable by user nobody (uid 65534)")
            // Only the index made readable (its WAL files still the owner's alone).
            chmod(harness.cache + "/index.sqlite-wal", 0o600)
            chmod(harness.cache + "/index.sqlite-shm", 0o600)
            try await checkReads("WAL files unreadable")
            // As an older worker left it: no WAL or shared-memory file beside the index.
            unlink(harness.cache + "/index.sqlite-wal")
            unlink(harness.cache + "/index.sqlite-shm")
            try await checkReads("without WAL files")
        } else {
            #expect(await chmodRecursively(harness.cache, "a-w"))
            try await checkReads("read-only")
            try await checkWrites("read-only", words: "is not writable by user")
            #expect(await chmodRecursively(harness.cache, "u+w"))
        }
        #expect(harness.origin.totalRequests == 2, "reads made no request")
    }

    /// A read-only mount (a bind mount in a mount namespace of its own, where that is allowed).
    @Test(.enabled(if: Conditions.canMount, "needs a mount namespace (root)"))
    func aReadOnlyMountServesEveryRead() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let bytes = harness.serve("m")
        let manifest = harness.manifest([("/f/m", bytes)])
        #expect(try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "-q"]).code == 0)
        let mount = "mount --bind '\(harness.cache)' '\(harness.cache)' && mount -o remount,ro,bind '\(harness.cache)' && "
        func inMount(_ command: String) async throws -> WorkerBinary.Result {
            try await WorkerBinary.run(
                ["-m", "sh", "-c", mount + "'\(WorkerBinary.path)' " + command + " --cache-dir '\(harness.cache)'"],
                executable: "/usr/bin/unshare")
        }
        let get = try await inMount("get '\(harness.origin.url("/f/m"))'")
        #expect(get.code == 0 && get.stdout.contains(sha256(bytes)), "\(get.stdout) \(get.stderr)")
        let status = try await inMount("status")
        #expect(status.code == 0 && status.stdout.contains("entries    1"), "\(status.stderr)")
        let verify = try await inMount("verify")
        #expect(verify.code == 0, "\(verify.stdout) \(verify.stderr)")
        let sync = try await inMount("sync '\(manifest)'")
        #expect(sync.code == 4 && sync.stderr.contains("read-only file system") && !sync.stderr.contains("SQLite"), "\(sync.stderr)")
    }

    /// A cache its administrator shares with a group (set-group-ID, group-readable root): the
    /// index is readable by the group, carries no URL credentials, and the group's users read.
    @Test(.enabled(if: Conditions.canRunAsOtherUsers, "needs root to give the cache to another group and read as nobody"))
    func aGroupSharedCacheStaysSharedWithoutCredentials() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let reader = try Reader(harness.directory)
        try FileManager.default.createDirectory(atPath: harness.cache, withIntermediateDirectories: true)
        chown(harness.cache, 0, 65534)
        chmod(harness.cache, 0o2750)
        let bytes = harness.serve("g")
        let secretURL = harness.origin.url("/f/g").replacingOccurrences(of: "://", with: "://alice:s3cret-pw@")
        let manifest = harness.directory.write("g.yaml", "version: 1\nentries:\n  - url: \(secretURL)\n    hash: sha256:\(sha256(bytes))\n")
        #expect(try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "-q"]).code == 0)
        var info = stat()
        #expect(stat(harness.cache + "/index.sqlite", &info) == 0)
        #expect(info.st_mode & 0o777 == 0o640 && info.st_gid == 65534, "mode \(String(info.st_mode & 0o777, radix: 8)), gid \(info.st_gid)")
        for suffix in ["", "-wal", "-shm"] {
            let data = (try? Data(contentsOf: URL(fileURLWithPath: harness.cache + "/index.sqlite" + suffix))) ?? Data()
            #expect(data.range(of: Data("s3cret-pw".utf8)) == nil, "credentials in index.sqlite\(suffix)")
        }
        // A member of the group (nobody's group here) reads; a second sync finds the entry.
        let status = try await reader.run(["status", "--cache-dir", harness.cache])
        #expect(status.code == 0 && status.stdout.contains("entries    1"), "\(status.stdout) \(status.stderr)")
        // The row's key is a digest keyed with a secret only the owner may read: a member of the
        // group cannot even match the URL, so the index lets it test no guessed password.
        var keyInfo = stat()
        #expect(stat(harness.cache + "/credential-key", &keyInfo) == 0 && keyInfo.st_mode & 0o077 == 0)
        let get = try await reader.run(["get", secretURL, "--cache-dir", harness.cache])
        #expect(get.code == 4 && !get.stdout.contains(sha256(bytes)), "\(get.stdout) \(get.stderr)")
        let owner = try await WorkerBinary.run(["get", secretURL, "--cache-dir", harness.cache])
        #expect(owner.code == 0 && owner.stdout.contains(sha256(bytes)), "\(owner.stdout) \(owner.stderr)")
        let again = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache])
        #expect(again.code == 0 && again.stdout.contains("unchanged 1"), "\(again.stdout)")
        #expect(harness.origin.totalRequests == 1)
        #expect(!again.stdout.contains("s3cret-pw"))
    }

    private func chmodRecursively(_ path: String, _ mode: String) async -> Bool {
        (try? await WorkerBinary.run(["-R", mode, path], executable: "/bin/chmod").code) == 0
    }
}
