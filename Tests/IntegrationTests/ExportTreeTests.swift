import Foundation
import Testing
import WorkerTestSupport

/// `export --layout tree`, `--atomic` for every layout, and an export into a folder that removes
/// what an earlier one wrote and no longer names, through the binary.
@Suite(.hangLimit) struct ExportTreeTests {
    private func names(_ folder: String) -> [String] {
        (FileManager.default.subpaths(atPath: folder) ?? []).filter { path in
            var isFolder: ObjCBool = false
            return FileManager.default.fileExists(atPath: folder + "/" + path, isDirectory: &isFolder) && !isFolder.boolValue
        }.sorted()
    }

    @Test func theTreeLayoutWritesEachEntryAtItsPathFromTheCacheAlone() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let a = harness.serve("a.png"), b = harness.serve("b.png")
        let manifest = harness.directory.write(
            "m.yaml",
            """
            version: 1
            entries:
              - url: \(harness.origin.url("/f/a.png"))
                hash: sha256:\(sha256(a))
              - url: \(harness.origin.url("/f/b.png"))
                hash: sha256:\(sha256(b))
                path: people/b.png
            """)
        #expect(try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "-q"]).code == 0)
        let requests = harness.origin.totalRequests
        let out = harness.directory.path + "/out"
        let result = try await WorkerBinary.run(["export", "--layout", "tree", out, manifest, "--cache-dir", harness.cache])
        #expect(result.code == 0, "\(result.stderr)")
        #expect(names(out) == [".worker-export", "f/a.png", "people/b.png"])
        #expect(try String(contentsOfFile: out + "/people/b.png", encoding: .utf8) == "content of b.png\n")
        #expect(harness.origin.totalRequests == requests, "no network")
        // Without manifests, the tree layout has no paths: a usage error.
        #expect(try await WorkerBinary.run(["export", "--layout", "tree", out, "--cache-dir", harness.cache]).code == 2)
    }

    @Test(arguments: ["tree", "sdwebimage", "kingfisher", "hash"])
    func atomicPublishesAnyLayoutAsALinkToACompleteVersion(layout: String) async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let manifest = harness.manifest([("/f/a.png", harness.serve("a.png")), ("/f/b.png", harness.serve("b.png"))])
        #expect(try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "-q"]).code == 0)
        let out = harness.directory.path + "/Bundle"
        let first = try await WorkerBinary.run(["export", "--layout", layout, "--atomic", out, manifest, "--cache-dir", harness.cache])
        #expect(first.code == 0, "\(first.stderr)")
        let link = try FileManager.default.destinationOfSymbolicLink(atPath: out)
        #expect(link.hasPrefix(".Bundle.worker/v-"))
        #expect(names(out + "/").count == 2, "two files, no list: the version is the list")
        // One entry fewer: a new version without it, switched at once.
        let fewer = harness.manifest([("/f/a.png", nil)], name: "fewer.yaml")
        #expect(try await WorkerBinary.run(["export", "--layout", layout, "--atomic", out, fewer, "--cache-dir", harness.cache]).code == 0)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: out) != link)
        #expect(names(out + "/").count == 1)
        // A real folder there is refused and left alone.
        let folder = harness.directory.path + "/Real"
        harness.directory.write("Real/mine.txt", "mine\n")
        let refused = try await WorkerBinary.run(["export", "--layout", layout, "--atomic", folder, manifest, "--cache-dir", harness.cache])
        #expect(refused.code == 2 && refused.stderr.contains(folder), "\(refused.stderr)")
        #expect(names(folder) == ["mine.txt"])
    }

    @Test func anExportIntoAFolderRemovesWhatAnEarlierOneWroteAndNoLongerNamesAndNothingElse() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let a = harness.serve("a.png"), b = harness.serve("b.png")
        let both = harness.manifest([("/f/a.png", a), ("/f/b.png", b)])
        #expect(try await WorkerBinary.run(["sync", both, "--cache-dir", harness.cache, "-q"]).code == 0)
        let bundle = harness.directory.path + "/Bundle"
        harness.directory.write("Bundle/Info.plist", "the app's own\n")
        #expect(try await WorkerBinary.run(["export", "--layout", "hash", bundle, both, "--cache-dir", harness.cache]).code == 0)
        #expect(names(bundle) == [".worker-export", "Info.plist", sha256(a) + ".png", sha256(b) + ".png"].sorted())
        // b left the manifest: its file goes, the app's own file stays.
        let one = harness.manifest([("/f/a.png", a)], name: "one.yaml")
        let result = try await WorkerBinary.run(["export", "--layout", "hash", bundle, one, "--cache-dir", harness.cache])
        #expect(result.code == 0, "\(result.stderr)")
        #expect(names(bundle) == [".worker-export", "Info.plist", sha256(a) + ".png"].sorted())
        #expect(result.stdout.contains("1 an earlier export wrote removed"), "\(result.stdout)")
    }
}
