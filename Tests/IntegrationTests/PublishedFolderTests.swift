import Foundation
import Glibc
import Testing
import WorkerTestSupport

/// The folders `worker` writes outside its cache (`sync --tree`, `export`) are as safe as the
/// cache: nothing is written or deleted through a link, an export removes only what it made,
/// `.NAME.worker/` must be the user's own, the tree's lock is waited for as the cache's, every
/// tree check comes before the first request, and a failed publish still writes the outputs
/// (the fourth review, issue 59; each reproduced through the binary, and each failed on 3038a51).
@Suite(.hangLimit) struct PublishedFolderTests {
    private func read(_ path: String) -> String? {
        try? String(contentsOfFile: path, encoding: .utf8)
    }

    private func isLink(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK
    }

    /// A manifest of local files (relative URLs, no `base_url`) in `site/`, synced into `cache`.
    private func localCache(
        _ directory: TemporaryDirectory, files: [(name: String, text: String, path: String?)]
    )
        async throws -> (manifest: String, cache: String)
    {
        var text = "version: 1\nentries:\n"
        for file in files {
            directory.write("site/" + file.name, file.text)
            text += "  - url: \(file.name)\n"
            if let path = file.path { text += "    path: \"\(path)\"\n" }
        }
        let manifest = directory.write("site/m.yaml", text)
        let cache = directory.path + "/cache"
        let synced = try await WorkerBinary.run(["sync", manifest, "--cache-dir", cache, "-q"])
        #expect(synced.code == 0, "\(synced.stderr)")
        return (manifest, cache)
    }

    // MARK: - 1. An export deletes only what it wrote

    /// A planted list (the form 3038a51 trusted: names only) named the user's own file and a file
    /// behind a linked folder: 3038a51 deleted both. A list in today's form edited to name the
    /// user's file with its true device and inode does not either: that file is writable, so it
    /// is no copy the export made, and no link to a cache object. What the export did write and no
    /// longer names is still removed.
    @Test func anExportRemovesOnlyWhatItWrote() async throws {
        let directory = TemporaryDirectory()
        let (manifest, cache) = try await localCache(directory, files: [("a.txt", "a\n", nil), ("b.txt", "b\n", nil)])
        let out = directory.path + "/out"
        let first = try await WorkerBinary.run(["export", "--layout", "tree", out, manifest, "--cache-dir", cache])
        #expect(first.code == 0, "\(first.stderr)")
        let mine = directory.write("out/mine.txt", "mine\n")
        let secret = directory.write("private/secret.txt", "secret\n")
        #expect(symlink(directory.path + "/private", out + "/linked") == 0)
        let list = out + "/.worker-export"
        let written = try #require(read(list))
        directory.write("out/.worker-export", "a.txt\nb.txt\nmine.txt\nlinked/secret.txt\n")
        let planted = try await WorkerBinary.run(["export", "--layout", "tree", out, manifest, "--cache-dir", cache])
        #expect(planted.code == 0, "\(planted.stderr)")
        #expect(read(mine) == "mine\n", "the user's own file stays")
        #expect(read(secret) == "secret\n", "a file behind a link stays")

        var info = stat()
        #expect(lstat(mine, &info) == 0)
        let forged = written + "\(info.st_dev) \(info.st_ino) \(info.st_size) \(String(repeating: "ab", count: 32)) mine.txt\n"
        directory.write("out/.worker-export", forged)
        let edited = try await WorkerBinary.run(["export", "--layout", "tree", out, manifest, "--cache-dir", cache])
        #expect(edited.code == 0, "\(edited.stderr)")
        #expect(read(mine) == "mine\n", "a writable file is no copy the export made")

        // What it wrote and no longer names goes.
        let fewer = directory.write("site/fewer.yaml", "version: 1\nentries:\n  - url: a.txt\n")
        let removed = try await WorkerBinary.run(["export", "--layout", "tree", out, fewer, "--cache-dir", cache])
        #expect(removed.code == 0 && removed.stdout.contains("1 an earlier export wrote removed"), "\(removed.stdout) \(removed.stderr)")
        #expect(read(out + "/b.txt") == nil && read(out + "/a.txt") == "a\n" && read(mine) == "mine\n")
    }

    /// Run as root into a folder another user owns: a list that user wrote is not trusted at all.
    @Test(.enabled(if: Conditions.isRoot, "a list owned by another user needs root to make"))
    func aListAnotherUserWroteIsNotTrusted() async throws {
        let directory = TemporaryDirectory()
        let (manifest, cache) = try await localCache(directory, files: [("a.txt", "a\n", nil)])
        let out = directory.path + "/theirs"
        #expect(try await WorkerBinary.run(["export", "--layout", "tree", out, manifest, "--cache-dir", cache]).code == 0)
        let theirs = directory.write("theirs/notes.txt", "their notes\n")
        chmod(theirs, 0o444)
        var info = stat()
        #expect(lstat(theirs, &info) == 0)
        let list = try #require(read(out + "/.worker-export"))
        directory.write(
            "theirs/.worker-export",
            list + "notes.txt\n\(info.st_dev) \(info.st_ino) \(info.st_size) \(String(repeating: "cd", count: 32)) notes.txt\n")
        #expect(chown(out + "/.worker-export", 65534, 65534) == 0 && chown(out, 65534, 65534) == 0)
        let result = try await WorkerBinary.run(["export", "--layout", "tree", out, manifest, "--cache-dir", cache])
        #expect(result.code == 0, "\(result.stderr)")
        #expect(read(theirs) == "their notes\n", "a list another user could write names nothing to delete")
    }

    // MARK: - 2. An export never writes through a link

    /// `out/sub -> elsewhere`: 3038a51 replaced `elsewhere/b.txt` with a cache object. Now the link
    /// where a folder goes is refused, naming it; a link where a file goes is replaced itself.
    @Test func anExportNeverWritesThroughALink() async throws {
        let directory = TemporaryDirectory()
        let (manifest, cache) = try await localCache(directory, files: [("a.txt", "a\n", "sub/b.txt"), ("c.txt", "c\n", nil)])
        let elsewhere = directory.path + "/elsewhere"
        directory.write("elsewhere/b.txt", "theirs\n")
        directory.write("elsewhere/c.txt", "theirs too\n")
        let out = directory.path + "/out"
        #expect(mkdir(out, 0o755) == 0)
        #expect(symlink(elsewhere, out + "/sub") == 0)
        #expect(symlink(elsewhere + "/c.txt", out + "/c.txt") == 0)
        let refused = try await WorkerBinary.run(["export", "--layout", "tree", out, manifest, "--cache-dir", cache])
        #expect(refused.code == 2, "\(refused.code) \(refused.stderr)")
        #expect(refused.stderr.contains(out + "/sub") && refused.stderr.contains("symbolic link"), "\(refused.stderr)")
        #expect(read(elsewhere + "/b.txt") == "theirs\n")
        #expect(read(elsewhere + "/c.txt") == "theirs too\n")

        #expect(unlink(out + "/sub") == 0)
        let written = try await WorkerBinary.run(["export", "--layout", "tree", out, manifest, "--cache-dir", cache])
        #expect(written.code == 0, "\(written.stderr)")
        #expect(!isLink(out + "/c.txt") && read(out + "/c.txt") == "c\n", "the link itself was replaced")
        #expect(read(elsewhere + "/c.txt") == "theirs too\n")
        #expect(read(out + "/sub/b.txt") == "a\n")
    }

    // MARK: - 3. Folders another user owns or can write

    @Test(.enabled(if: Conditions.isRoot, "a folder owned by another user needs root to make"))
    func aVersionsFolderAnotherUserMadeIsRefusedBeforeAnyRequest() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let manifest = harness.manifest([("/f/a.png", harness.serve("a.png"))])
        let www = harness.directory.path + "/www"
        #expect(mkdir(www, 0o755) == 0 && mkdir(www + "/.site.worker", 0o755) == 0)
        #expect(chown(www + "/.site.worker", 65534, 65534) == 0)
        let refused = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--tree", www + "/site"])
        #expect(refused.code == 4, "\(refused.code) \(refused.stderr)")
        #expect(
            refused.stderr.contains(".site.worker belongs to another user") && refused.stderr.contains("uid 65534"),
            "\(refused.stderr)")
        #expect(harness.origin.totalRequests == 0, "refused before any request")
        let export = try await WorkerBinary.run([
            "export", "--layout", "tree", "--atomic", www + "/site", manifest,
            "--cache-dir", harness.cache,
        ])
        #expect(export.code == 4, "\(export.code) \(export.stderr)")

        // Open to every user (0777 without the sticky bit): refused as root; with it, published.
        #expect(rmdir(www + "/.site.worker") == 0)
        chmod(www, 0o777)
        let open = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--tree", www + "/site"])
        #expect(open.code == 4 && open.stderr.contains("can be written by other users"), "\(open.code) \(open.stderr)")
        #expect(harness.origin.totalRequests == 0)
        chmod(www, 0o1777)
        let sticky = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--tree", www + "/site"])
        #expect(sticky.code == 0, "\(sticky.stderr)")
        #expect(read(www + "/site/f/a.png") == "content of a.png\n")
    }

    // MARK: - 4 and 6. The tree's lock is bounded; a failed publish still writes the outputs

    /// 3038a51 waited for `.NAME.worker/lock` without end, holding the cache's lock: `--wait-lock`
    /// was ignored and `gc` stalled behind it. Now the wait ends at `--wait-lock` (exit 3), every
    /// output is written with the tree's failure in it, and nothing holds the cache meanwhile.
    @Test func theTreeLockIsWaitedForAsTheCacheLockAndAFailedPublishStillWritesEveryOutput() async throws {
        let directory = TemporaryDirectory()
        let (manifest, cache) = try await localCache(directory, files: [("a.txt", "a\n", nil)])
        let tree = directory.path + "/site-tree"
        #expect(try await WorkerBinary.run(["sync", manifest, "--cache-dir", cache, "--tree", tree, "-q"]).code == 0)
        let holder = open(directory.path + "/.site-tree.worker/lock", O_RDWR)
        try #require(holder >= 0)
        defer { close(holder) }
        try #require(flock(holder, LOCK_EX | LOCK_NB) == 0)

        let (report, junit, metrics) = (directory.path + "/r.json", directory.path + "/j.xml", directory.path + "/m.prom")
        let locked = try await WorkerBinary.run(
            [
                "sync", manifest, "--cache-dir", cache, "--tree", tree, "--wait-lock", "1",
                "--report", report, "--junit", junit, "--metrics", metrics,
            ], seconds: 60)
        #expect(locked.code == 3, "\(locked.code) \(locked.stderr)")
        #expect(locked.stderr.contains(".site-tree.worker/lock"), "\(locked.stderr)")
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])
        let outcome = try #require(document["tree"] as? [String: Any])
        #expect((outcome["error"] as? String)?.contains("locked") == true, "\(outcome)")
        #expect(read(junit) != nil && read(metrics) != nil, "every output is written")

        // A sync that waits for the tree's lock holds no cache lock: gc runs meanwhile.
        let waiting = Task {
            try await WorkerBinary.run(
                ["sync", manifest, "--cache-dir", cache, "--tree", tree, "--wait-lock", "30"],
                seconds: 90)
        }
        try await Task.sleep(nanoseconds: 1_500_000_000)
        let gc = try await WorkerBinary.run(["gc", "--cache-dir", cache, "--wait-lock", "2"], seconds: 60)
        #expect(gc.code == 0, "\(gc.code) \(gc.stderr)")
        flock(holder, LOCK_UN)
        let waited = try await waiting.value
        #expect(waited.code == 0, "\(waited.code) \(waited.stderr)")
    }

    // MARK: - 5. Every tree check before the first request

    @Test func aPlantedVersionsLinkIsFoundBeforeAnyRequest() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let manifest = harness.manifest([("/f/a.png", harness.serve("a.png"))])
        let elsewhere = harness.directory.path + "/elsewhere"
        #expect(mkdir(elsewhere, 0o755) == 0)
        #expect(symlink(elsewhere, harness.directory.path + "/.site.worker") == 0)
        let result = try await WorkerBinary.run([
            "sync", manifest, "--cache-dir", harness.cache, "--tree", harness.directory.path + "/site",
        ])
        #expect(result.code == 4, "\(result.code) \(result.stderr)")
        #expect(result.stderr.contains(".site.worker is a symbolic link"), "\(result.stderr)")
        #expect(harness.origin.totalRequests == 0, "found before any request")
        #expect((try? FileManager.default.contentsOfDirectory(atPath: elsewhere)) == [], "nothing written through it")
    }

    /// `café/` as U+00E9 and as `e` + U+0301 are two folders on disk: both are published (3038a51
    /// took them for one, failed the publish with exit 4 and left a `.building-` folder).
    @Test func twinNamesThatDifferOnlyInNormalizationAreTwoFolders() async throws {
        let directory = TemporaryDirectory()
        let composed = "caf\u{E9}", decomposed = "cafe\u{301}"
        let (manifest, cache) = try await localCache(
            directory,
            files: [
                ("a.txt", "a\n", composed + "/a.txt"),
                ("b.txt", "b\n", decomposed + "/b.txt"),
            ])
        let tree = directory.path + "/site-tree"
        let result = try await WorkerBinary.run(["sync", manifest, "--cache-dir", cache, "--tree", tree])
        #expect(result.code == 0, "\(result.code) \(result.stderr)")
        #expect(read(tree + "/" + composed + "/a.txt") == "a\n")
        #expect(read(tree + "/" + decomposed + "/b.txt") == "b\n")
        let folders = try FileManager.default.contentsOfDirectory(atPath: tree + "/")
        #expect(Set(folders.map { Array($0.utf8) }) == [Array(composed.utf8), Array(decomposed.utf8)], "\(folders)")
        let versions = try FileManager.default.contentsOfDirectory(atPath: directory.path + "/.site-tree.worker")
        #expect(!versions.contains { $0.hasPrefix(".building-") }, "\(versions)")
    }
}
