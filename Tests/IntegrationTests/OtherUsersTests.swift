import Foundation
import Glibc
import Testing
import WorkerTestSupport

@testable import WorkerStore

/// A cache another user could write into is refused by every command that writes, and nothing a
/// planted link or row says leads a write, a mode change, a delete or a fetch out of the cache
/// (the third review, reproduced through the binary).
@Suite(.hangLimit) struct OtherUsersTests {
    private func mode(_ path: String) -> mode_t {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : 0
    }

    /// `nogroup` has `nobody` in it (its primary group): a folder writable by that group is
    /// writable by another user. Root's own group has no one else: 0775 under umask 002 is fine.
    @Test(.enabled(if: Conditions.isRoot, "chgrp to a group with other members needs root (CI runs as root)"))
    func aFolderItsGroupCanWriteIsRefusedUnlessTheGroupIsTheOwnersAlone() async throws {
        let directory = TemporaryDirectory()
        let (manifest, cache) = try await directory.syncedLocalCache()
        let objects = cache + "/objects/sha256"
        #expect(chown(objects, uid_t.max, 65534) == 0)
        chmod(objects, 0o775)
        let refused = try await WorkerBinary.run(["sync", manifest, "--cache-dir", cache])
        #expect(refused.code == 4, "\(refused.code) \(refused.stderr)")
        #expect(refused.stderr.contains("\(objects) can be written by its group, which has other members"), "\(refused.stderr)")
        #expect(refused.stderr.contains("nobody") && refused.stderr.contains("mode 0775"), "\(refused.stderr)")
        for command in [["gc"], ["rm", "file://x"], ["verify", "--repair"], ["clear"]] {
            #expect(try await WorkerBinary.run(command + ["--cache-dir", cache]).code == 4, "\(command)")
        }
        // Reads still answer.
        #expect(try await WorkerBinary.run(["status", "--cache-dir", cache]).code == 0)
        #expect(chown(objects, uid_t.max, 0) == 0)
        let privateGroup = try await WorkerBinary.run(["sync", manifest, "--cache-dir", cache])
        #expect(privateGroup.code == 0, "the owner's own group may write: \(privateGroup.stderr)")
    }

    @Test(.enabled(if: Conditions.isRoot, "a folder owned by another user needs root to make"))
    func aFolderOwnedByAnotherUserIsRefused() async throws {
        let directory = TemporaryDirectory()
        let (manifest, cache) = try await directory.syncedLocalCache()
        #expect(chown(cache + "/partial", 65534, 65534) == 0)
        let refused = try await WorkerBinary.run(["sync", manifest, "--cache-dir", cache])
        #expect(refused.code == 4, "\(refused.code) \(refused.stderr)")
        #expect(
            refused.stderr.contains("\(cache)/partial belongs to another user") && refused.stderr.contains("uid 65534"),
            "\(refused.stderr)")
    }

    @Test func aLinkPlantedAtTheWALChangesNoOtherFile() async throws {
        let directory = TemporaryDirectory()
        let (manifest, cache) = try await directory.syncedLocalCache()
        let victim = directory.write("victim.txt", "root only\n")
        chmod(victim, 0o640)
        // An index whose mode is not the cache's is set right as it opens: through the link, on
        // f94e2a0.
        chmod(cache + "/index.sqlite", 0o644)
        unlink(cache + "/index.sqlite-wal")
        #expect(symlink(victim, cache + "/index.sqlite-wal") == 0)
        let result = try await WorkerBinary.run(["sync", manifest, "--cache-dir", cache])
        #expect(result.code == 4, "\(result.code) \(result.stderr)")
        #expect(result.stderr.contains("index.sqlite-wal is not a regular file (a symbolic link)"), "\(result.stderr)")
        #expect(mode(victim) == 0o640, "the file the link names keeps its mode")
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "root only\n")
    }

    @Test func aTmpFolderSwappedForALinkDeletesNothing() async throws {
        let directory = TemporaryDirectory()
        let (manifest, cache) = try await directory.syncedLocalCache()
        let victims = directory.path + "/private"
        directory.write("private/one.txt", "1\n")
        directory.write("private/two.txt", "2\n")
        #expect(rmdir(cache + "/tmp") == 0)
        #expect(symlink(victims, cache + "/tmp") == 0)
        for command in [["sync", manifest], ["verify", "--repair"], ["clear"], ["gc"]] {
            let result = try await WorkerBinary.run(command + ["--cache-dir", cache])
            #expect(result.code == 4, "\(command): \(result.code) \(result.stderr)")
        }
        #expect(directory.files(under: "private") == ["one.txt", "two.txt"])
    }

    @Test func aJobsFolderSwappedForALinkCreatesNothingElsewhere() async throws {
        let directory = TemporaryDirectory()
        let (manifest, cache) = try await directory.syncedLocalCache()
        let elsewhere = directory.path + "/elsewhere"
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        try FileManager.default.removeItem(atPath: cache + "/jobs")
        #expect(symlink(elsewhere, cache + "/jobs") == 0)
        let result = try await WorkerBinary.run(["sync", manifest, "--cache-dir", cache])
        #expect(result.code == 4, "\(result.code) \(result.stderr)")
        #expect(result.stderr.contains("\(cache)/jobs is not a real folder"), "\(result.stderr)")
        #expect(directory.files(under: "elsewhere").isEmpty, "\(directory.files(under: "elsewhere"))")
    }

    /// `lock`, `writers` and the job locks are the owner's alone (a reader that could open one could
    /// hold it, `flock` working on a read-only descriptor, and stop every writer); older 0644
    /// ones are set right.
    @Test func lockFilesAreOwnerOnly() async throws {
        let directory = TemporaryDirectory()
        let (manifest, cache) = try await directory.syncedLocalCache()
        chmod(cache + "/lock", 0o644)
        chmod(cache + "/writers", 0o644)
        let jobs = directory.files(under: "cache/jobs")
        try #require(jobs.count == 1)
        chmod(cache + "/jobs/" + jobs[0], 0o644)
        #expect(try await WorkerBinary.run(["sync", manifest, "--cache-dir", cache]).code == 0)
        for file in ["lock", "writers", "jobs/" + jobs[0]] {
            #expect(mode(cache + "/" + file) == 0o600, "\(file): \(String(mode(cache + "/" + file), radix: 8))")
        }
        #expect(mode(cache + "/jobs") & 0o077 == 0)
    }

    /// `verify --repair` reads local files again only from the folders of the manifests it is
    /// given — never from folders the index names — and never fetches a URL it has no hash for.
    @Test func repairTrustsNoFolderOrHashlessURLFromTheIndex() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let directory = harness.directory
        let (_, cache) = try await directory.syncedLocalCache()
        let secret = directory.write("private/secret.txt", "the owner's secret\n")
        let secretManifest = directory.write("private/m.yaml", "version: 1\nentries:\n  - url: secret.txt\n")
        harness.serve("anything")
        // Rows planted by whoever could write the index: a local file in another folder, with the
        // manifest run that names its folder, and a URL without a hash; neither has its object.
        let database = try SQLiteDatabase(path: cache + "/index.sqlite", create: false)
        let missing = String(repeating: "ab", count: 32)
        try database.execute(
            """
            INSERT INTO manifest_runs VALUES ('\(secretManifest)', 'm', 1, 0, 0);
            INSERT INTO entries(url, hash, object, size, fetched_at, last_used) VALUES ('file://\(secret)', NULL, '\(missing)', 19, 0, 0);
            INSERT INTO entries(url, hash, object, size, fetched_at, last_used) VALUES ('\(harness.origin.url("/f/anything"))', NULL, '\(missing)', 9, 0, 0);
            """)
        let repaired = try await WorkerBinary.run(["verify", "--repair", "--cache-dir", cache])
        #expect(repaired.code == 0, "\(repaired.stdout) \(repaired.stderr)")
        #expect(repaired.stdout.contains("dropped 2"), "\(repaired.stdout)")
        #expect(harness.origin.hits("/f/anything") == 0, "a URL without a hash is not fetched")
        for object in directory.files(under: "cache/objects/sha256") {
            let bytes = try String(contentsOfFile: cache + "/objects/sha256/" + object, encoding: .utf8)
            #expect(bytes != "the owner's secret\n", "a file outside the given manifests' folders was copied in")
        }
        #expect(try await WorkerBinary.run(["verify", "--cache-dir", cache]).code == 0)
    }
}
