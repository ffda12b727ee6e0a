import Foundation
import Testing
import WorkerTestSupport

/// `sync --tree DIR --layout LAYOUT`: an app library's layout published by switching one link,
/// named as `worker export --layout` names it, through the binary.
@Suite(.hangLimit) struct TreeLayoutTests {
    /// File names under `folder` (through its link), but the export's list.
    private func names(_ folder: String) throws -> [String] {
        let root = URL(fileURLWithPath: folder).resolvingSymlinksInPath().path
        return try FileManager.default.contentsOfDirectory(atPath: root).filter { $0 != ".worker-export" }.sorted()
    }

    @Test(arguments: ["sdwebimage", "kingfisher", "hash"])
    func aSyncPublishesTheLayoutExportWrites(layout: String) async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let a = harness.serve("a.png"), b = harness.serve("b.jpg")
        // The same bytes at another URL: one file in a layout named by content, two in one named by URL.
        let copy = harness.serve("copy-of-a.png", String(decoding: a, as: UTF8.self))
        var text = "version: 1\nentries:\n"
        for (path, bytes) in [("/f/a.png", a), ("/f/b.jpg", b), ("/f/copy-of-a.png", copy)] {
            text += "  - url: \(harness.origin.url(path))\n    hash: sha256:\(sha256(bytes))\n"
        }
        let complete = text
        // Never fetched: counted as missing, no file.
        text += "  - url: \(harness.origin.url("/f/gone.png"))\n    hash: sha256:\(String(repeating: "0", count: 64))\n"
        let manifest = harness.directory.write("m.yaml", text)
        let tree = harness.directory.path + "/app-cache"
        let report = harness.directory.path + "/r.json"
        let synced = try await WorkerBinary.run([
            "sync", manifest, "--cache-dir", harness.cache, "--tree", tree, "--layout", layout,
            "--report", report, "-q", "--progress", "never",
        ])
        #expect(synced.code == 1, "one entry failed: \(synced.stderr)")
        let exported = harness.directory.path + "/exported"
        let export = try await WorkerBinary.run(["export", "--layout", layout, exported, manifest, "--cache-dir", harness.cache])
        #expect(export.code == 1 && export.stderr.contains("not cached"), "the missing entry: \(export.stderr)")
        let published = try names(tree)
        #expect(published == (try names(exported)))
        #expect(published.count == (layout == "hash" ? 2 : 3), "\(published)")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: tree).hasPrefix(".app-cache.worker/v-"))
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any]
        let summary = try #require(json?["tree"] as? [String: Any])
        #expect(summary["files"] as? Int == published.count && summary["missing"] as? Int == 1)
        // Each file is the cache's object itself.
        for name in published {
            var inTree = stat(), object = stat()
            let held = try Data(contentsOf: URL(fileURLWithPath: tree + "/" + name))
            #expect(stat(tree + "/" + name, &inTree) == 0 && stat(harness.objectPath(sha256(Array(held))), &object) == 0)
            #expect(inTree.st_ino == object.st_ino)
        }
        // Without the missing entry: a dry run in the same layout sees nothing to switch, one in another does.
        let completeManifest = harness.directory.write("complete.yaml", complete)
        #expect(
            try await WorkerBinary.run([
                "sync", completeManifest, "--cache-dir", harness.cache, "--tree", tree, "--layout", layout,
                "-q",
            ]).code == 0)
        let same = try await WorkerBinary.run(["plan", completeManifest, "--cache-dir", harness.cache, "--tree", tree, "--layout", layout])
        #expect(same.code == 0 && same.stdout.contains("unchanged (\(published.count) files)"), "\(same.stdout)")
        let other = try await WorkerBinary.run(["plan", completeManifest, "--cache-dir", harness.cache, "--tree", tree])
        #expect(other.code == 0, "\(other.stderr)")
        #expect(other.stdout.contains("would switch"), "the tree layout names other files: \(other.stdout)")
    }

    @Test func aLayoutWithoutATreeIsAUsageError() async throws {
        let directory = TemporaryDirectory()
        let manifest = directory.write("m.yaml", "version: 1\nentries: []\n")
        for command in ["sync", "plan"] {
            let result = try await WorkerBinary.run([command, manifest, "--cache-dir", directory.path + "/c", "--layout", "hash"])
            #expect(result.code == 2)
            #expect(result.stderr.contains("--layout goes with --tree DIR"), "\(result.stderr)")
        }
    }
}
