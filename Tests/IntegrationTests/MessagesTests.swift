import Foundation
import Glibc
import Testing
import WorkerTestSupport

/// Messages a newcomer met that said something else than what happened (the third review's
/// trial), through the binary.
@Suite(.hangLimit) struct MessagesTests {
    @Test(.enabled(if: Conditions.canRunAsOtherUsers, "runs a command as nobody (CI runs as root)"))
    func aCacheFolderThisUserCannotReadIsNotCalledMissing() async throws {
        let directory = TemporaryDirectory()
        let (_, cache) = try await directory.syncedLocalCache()
        chmod(cache, 0o700)
        let binary = try WorkerBinary.copyForOtherUsers(into: directory)
        let status = try await WorkerBinary.run(
            ["--reuid=65534", "--regid=65534", "--clear-groups", "--", binary, "status", "--cache-dir", cache],
            executable: "/usr/bin/setpriv")
        #expect(status.code == 4, "\(status.code) \(status.stderr)")
        #expect(
            status.stderr.contains("cannot read the cache at \(cache): Permission denied") && !status.stderr.contains("no cache at"),
            "\(status.stderr)")
    }

    @Test func anExportFolderThatCannotBeMadeSaysWhy() async throws {
        let directory = TemporaryDirectory()
        let (manifest, cache) = try await directory.syncedLocalCache()
        let result = try await WorkerBinary.run(["export", "--layout", "hash", manifest + "/inside", "--cache-dir", cache])
        #expect(result.code == 4, "\(result.code) \(result.stderr)")
        #expect(
            result.stderr.contains("cannot write \(manifest)/inside: cannot create the export folder")
                && !result.stderr.contains("cache unusable"),
            "\(result.stderr)")
    }

    /// Two entries of one content make one file in a layout named by content: counted once.
    @Test func anExportCountsTheFilesItWrote() async throws {
        let directory = TemporaryDirectory()
        directory.write("site/a.txt", "same\n")
        directory.write("site/b.txt", "same\n")
        let manifest = directory.write("site/m.yaml", "version: 1\nentries:\n  - url: a.txt\n  - url: b.txt\n")
        let cache = directory.path + "/cache"
        #expect(try await WorkerBinary.run(["sync", manifest, "--cache-dir", cache]).code == 0)
        let result = try await WorkerBinary.run(["export", "--layout", "hash", directory.path + "/out", "--cache-dir", cache])
        #expect(result.stdout.hasPrefix("exported 2 entries as 1 file to"), "\(result.stdout)")
        #expect(directory.files(under: "out").filter { $0 != ".worker-export" }.count == 1)
    }

    /// A failed entry whose cache holds another manifest's newer version names that version.
    @Test func aStaleNoteNamesTheVersionThatStays() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let old = Array("version one\n".utf8)
        let new = Array("version two\n".utf8)
        harness.origin.set("/f/a", old)
        let first = harness.manifest([("/f/a", old)], name: "one.yaml")
        #expect(try await WorkerBinary.run(["sync", first, "--cache-dir", harness.cache]).code == 0)
        harness.origin.set("/f/a", new)
        let second = harness.manifest([("/f/a", new)], name: "two.yaml")
        #expect(try await WorkerBinary.run(["sync", second, "--cache-dir", harness.cache]).code == 0)
        // The first manifest again: the origin serves the newer bytes, which fail its hash.
        let again = try await WorkerBinary.run(["sync", first, "--cache-dir", harness.cache, "--retries", "0"])
        #expect(again.code == 1)
        #expect(again.stderr.contains("[the cached version (sha256:\(sha256(new).prefix(12))…) stays]"), "\(again.stderr)")
        #expect(!again.stderr.contains("earlier version"), "\(again.stderr)")
    }

    /// Local files count no bytes: the progress line shows entries, not "0 B of 0 B".
    @Test func progressOfLocalFilesShowsNoEmptyByteCounts() async throws {
        let directory = TemporaryDirectory()
        let (manifest, _) = try await directory.syncedLocalCache()
        let result = try await WorkerBinary.run(["sync", manifest, "--cache-dir", directory.path + "/other", "--progress", "always"])
        #expect(result.code == 0)
        #expect(result.stderr.contains("progress: 1/1 entries") && !result.stderr.contains("0 B of 0 B"), "\(result.stderr)")
    }
}
