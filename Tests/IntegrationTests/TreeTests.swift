import Foundation
import Synchronization
import Testing
import WorkerTestSupport

/// `sync --tree DIR`: every entry at its tree path, published by switching one link, through
/// the binary.
/// Six minutes: the twenty switches with a reader take 10 s alone, beside the whole suite 135–146 s
/// (b1a24d3 and 73069b3 alike), and one CI run passed 180 s. The limit is there for a hang.
@Suite(.hangLimit) struct TreeTests {
    /// A manifest of `(origin path, body, tree path or nil)` with hashes.
    private func manifest(_ harness: Harness, _ entries: [(String, [UInt8], String?)], name: String = "m.yaml") -> String {
        var text = "version: 1\nentries:\(entries.isEmpty ? " []" : "")\n"
        for (path, bytes, tree) in entries {
            text += "  - url: \(harness.origin.url(path))\n    hash: sha256:\(sha256(bytes))\n"
            if let tree { text += "    path: \(tree)\n" }
        }
        return harness.directory.write(name, text)
    }

    private func sync(_ harness: Harness, _ manifest: String, tree: String, _ extra: [String] = []) async throws -> WorkerBinary.Result {
        try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--tree", tree, "-q", "--progress", "never"] + extra)
    }

    /// Every file under `tree` (through its link), by relative path.
    private func contents(_ tree: String) -> [String: String] {
        var found: [String: String] = [:]
        let root = URL(fileURLWithPath: tree).resolvingSymlinksInPath().path
        guard let walker = FileManager.default.enumerator(atPath: root) else { return [:] }
        while let relative = walker.nextObject() as? String {
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: root + "/" + relative, isDirectory: &isFolder), !isFolder.boolValue {
                found[relative] = (try? String(contentsOfFile: root + "/" + relative, encoding: .utf8)) ?? "<unreadable>"
            }
        }
        return found
    }

    private func versions(_ tree: String) -> [String] {
        let folder =
            URL(fileURLWithPath: tree).deletingLastPathComponent().path + "/." + URL(fileURLWithPath: tree).lastPathComponent + ".worker"
        return ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0 != "lock" }.sorted()
    }

    private func treeObject(_ report: String) throws -> [String: Any] {
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any]
        return try #require(json?["tree"] as? [String: Any])
    }

    @Test func aSyncPublishesEveryEntryAtItsPathAsHardLinksBehindOneLink() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let a = harness.serve("a.txt"), b = harness.serve("deep/b.txt"), c = harness.serve("c%20d.txt")
        let manifest = manifest(harness, [("/f/a.txt", a, nil), ("/f/deep/b.txt", b, "people/b.txt"), ("/f/c%20d.txt", c, nil)])
        let tree = harness.directory.path + "/site"
        let report = harness.directory.path + "/r.json"
        let result = try await sync(harness, manifest, tree: tree, ["--report", report])
        #expect(result.code == 0, "\(result.stderr)")
        #expect(
            contents(tree) == [
                "f/a.txt": "content of a.txt\n", "people/b.txt": "content of deep/b.txt\n",
                "f/c d.txt": "content of c%20d.txt\n",
            ])
        let link = try FileManager.default.destinationOfSymbolicLink(atPath: tree)
        #expect(link.hasPrefix(".site.worker/v-"), "a relative link to a version beside it: \(link)")
        // A hard link to the cache's object: the same file.
        var inTree = stat(), object = stat()
        #expect(stat(tree + "/f/a.txt", &inTree) == 0 && stat(harness.objectPath(sha256(a)), &object) == 0)
        #expect(inTree.st_ino == object.st_ino)
        let summary = try treeObject(report)
        #expect(summary["files"] as? Int == 3 && summary["linked"] as? Int == 3 && summary["copied"] as? Int == 0)
        #expect(summary["missing"] as? Int == 0 && summary["switched"] as? Bool == true)
        #expect(summary["path"] as? String == URL(fileURLWithPath: tree).standardizedFileURL.path)
        #expect(summary["version"] as? String == String(link.dropFirst(".site.worker/".count)))
    }

    @Test func anUnchangedTreeSwitchesNothingAndTheVersionBeforeStaysUntilTheNextSwitch() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let tree = harness.directory.path + "/site"
        let report = harness.directory.path + "/r.json"
        var links: [String] = []
        for round in 0..<3 {
            let body = harness.serve("v\(round).txt")
            let manifest = manifest(harness, [("/f/v\(round).txt", body, "page.txt")])
            #expect(try await sync(harness, manifest, tree: tree).code == 0)
            links.append(try FileManager.default.destinationOfSymbolicLink(atPath: tree))
            #expect(contents(tree) == ["page.txt": "content of v\(round).txt\n"])
            // Again, unchanged: nothing switched, the same link.
            #expect(try await sync(harness, manifest, tree: tree, ["--report", report]).code == 0)
            #expect(try treeObject(report)["switched"] as? Bool == false)
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: tree) == links.last)
        }
        #expect(Set(links).count == 3)
        // The current version and the one before it; the first is gone.
        let names = links.map { String($0.split(separator: "/").last!) }
        #expect(versions(tree) == [names[1], names[2]].sorted())
    }

    @Test func aFailedEntryKeepsItsVersionAndOneNeverFetchedIsAbsent() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let old = harness.serve("a.txt", "old\n")
        let tree = harness.directory.path + "/site"
        #expect(try await sync(harness, manifest(harness, [("/f/a.txt", old, nil)]), tree: tree).code == 0)
        // The manifest now wants other bytes, which the origin does not serve; a new entry 404s.
        let report = harness.directory.path + "/r.json"
        let next = manifest(harness, [("/f/a.txt", Array("new\n".utf8), nil), ("/f/never.txt", Array("x".utf8), nil)])
        let result = try await sync(harness, next, tree: tree, ["--report", report])
        #expect(result.code == 1)
        #expect(contents(tree) == ["f/a.txt": "old\n"])
        let summary = try treeObject(report)
        #expect(summary["files"] as? Int == 1 && summary["missing"] as? Int == 1)
    }

    @Test(arguments: ["folder", "file", "link"]) func somethingElseAtTheTreePathIsRefusedAndLeftAlone(kind: String) async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let body = harness.serve("a.txt")
        let tree = harness.directory.path + "/site"
        switch kind {
        case "folder": harness.directory.write("site/keep.txt", "mine\n")
        case "file": harness.directory.write("site", "mine\n")
        default: try FileManager.default.createSymbolicLink(atPath: tree, withDestinationPath: harness.directory.path)
        }
        let result = try await sync(harness, manifest(harness, [("/f/a.txt", body, nil)]), tree: tree)
        #expect(result.code == 2)
        #expect(result.stderr.contains(tree), "names it: \(result.stderr)")
        #expect(harness.origin.totalRequests == 0, "refused before any request")
        switch kind {
        case "folder": #expect(try String(contentsOfFile: tree + "/keep.txt", encoding: .utf8) == "mine\n")
        case "file": #expect(try String(contentsOfFile: tree, encoding: .utf8) == "mine\n")
        default: #expect(try FileManager.default.destinationOfSymbolicLink(atPath: tree) == harness.directory.path)
        }
        #expect(!FileManager.default.fileExists(atPath: harness.directory.path + "/.site.worker"))
    }

    @Test func treePathsAreCheckedWithTheManifestBeforeAnyRequest() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let url = harness.origin.url("/f/")
        // Wrong whatever the command: a `path` that cannot be a tree path.
        let bad = harness.directory.write(
            "bad.yaml",
            """
            version: 1
            entries:
              - url: \(url)a
                path: /etc/passwd
              - url: \(url)b
                path: a/../../b
              - url: \(url)c
                path: "a\\u0001b"
            """)
        let plain = try await WorkerBinary.run(["plan", bad, "--cache-dir", harness.cache])
        #expect(plain.code == 2)
        #expect(plain.stderr.contains("bad.yaml:4:11: the tree path '/etc/passwd' is absolute"), "\(plain.stderr)")
        #expect(plain.stderr.contains("bad.yaml:6:11:") && plain.stderr.contains("'..'"))
        #expect(plain.stderr.contains("bad.yaml:8:11:") && plain.stderr.contains("control character"))
        // Checked for a tree: two entries at one path (both named), a file where a folder must
        // be, a URL without a path of its own.
        let clash = harness.directory.write(
            "clash.yaml",
            """
            version: 1
            entries:
              - url: \(url)x.png
                path: img/x.png
              - url: \(url)y.png
                path: img/x.png
              - url: \(url)img
                path: img
              - url: \(url)
            """)
        let result = try await sync(harness, clash, tree: harness.directory.path + "/site")
        #expect(result.code == 2)
        #expect(
            result.stderr.contains("clash.yaml:6:11: tree path 'img/x.png' is also the path of the entry at \(clash):4:11"),
            "\(result.stderr)")
        #expect(result.stderr.contains("needs a folder 'img', which is the file of the entry at \(clash):8:11"))
        #expect(result.stderr.contains("clash.yaml:9:10: the URL's path is empty or ends in '/'"))
        #expect(harness.origin.totalRequests == 0)
        #expect(!FileManager.default.fileExists(atPath: harness.cache))
        // Without a tree, the explicit paths are still checked against each other; the URLs'
        // own paths (two hosts may serve /logo.png) are not.
        let withoutTree = try await WorkerBinary.run(["plan", clash, "--cache-dir", harness.cache])
        #expect(
            withoutTree.code == 2 && withoutTree.stderr.contains("clash.yaml:6:11: tree path 'img/x.png' is also the path"),
            "\(withoutTree.stderr)")
        #expect(!withoutTree.stderr.contains("ends in '/'"))
        let hosts = harness.directory.write(
            "hosts.yaml",
            """
            version: 1
            entries:
              - url: \(url)logo.png
              - url: \(url)logo.png?v=2
              - url: \(url)
            """)
        #expect(try await WorkerBinary.run(["plan", hosts, "--cache-dir", harness.cache]).code == 0)
    }

    @Test func aReaderNeverSeesAMixOfVersionsOrAMissingFileDuringTwentySwitches() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let tree = harness.directory.path + "/site"
        let names = (0..<20).map { "file\($0).txt" }
        func publish(_ round: Int) async throws {
            let entries = names.map { name in ("/f/\(round)/\(name)", harness.serve("\(round)/\(name)", "round \(round)\n"), name) }
            let result = try await sync(harness, manifest(harness, entries, name: "m\(round).yaml"), tree: tree)
            #expect(result.code == 0, "\(result.stderr)")
        }
        try await publish(0)
        let stop = Atomic(false)
        let seen = Mutex((reads: 0, mixed: 0, missing: 0, rounds: Set<String>()))
        let reader = Thread {
            while !stop.load(ordering: .acquiring) {
                // One resolution of the link, then every file through it.
                let folder = open(tree, O_RDONLY | O_DIRECTORY)
                guard folder >= 0 else { seen.withLock { $0.missing += 1 }; continue }
                var texts = Set<String>()
                var missing = 0
                for name in names {
                    let fd = openat(folder, name, O_RDONLY)
                    guard fd >= 0 else { missing += 1; continue }
                    var buffer = [UInt8](repeating: 0, count: 64)
                    let count = read(fd, &buffer, buffer.count)
                    close(fd)
                    texts.insert(String(decoding: buffer[0..<max(0, count)], as: UTF8.self))
                }
                close(folder)
                // A breath between passes: a reader that never sleeps takes a core from every
                // other test of the suite (each publish still sees dozens of passes).
                usleep(200)
                seen.withLock { seen in
                    seen.reads += 1
                    seen.missing += missing
                    if texts.count > 1 { seen.mixed += 1 }
                    seen.rounds.formUnion(texts)
                }
            }
        }
        reader.start()
        for round in 1...20 { try await publish(round) }
        stop.store(true, ordering: .releasing)
        while seen.withLock({ $0.reads }) == 0 { try await Task.sleep(nanoseconds: 10_000_000) }
        let result = seen.withLock { $0 }
        #expect(result.mixed == 0 && result.missing == 0, "\(result.reads) reads")
        #expect(result.rounds.count > 1, "the reader saw the tree switch")
        #expect(contents(tree).values.allSatisfy { $0 == "round 20\n" })
        #expect(versions(tree).count == 2)
    }

    @Test func gcPruneAndClearNeverBreakAPublishedTree() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let a = harness.serve("a.txt")
        let tree = harness.directory.path + "/site"
        #expect(try await sync(harness, manifest(harness, [("/f/a.txt", a, nil)]), tree: tree).code == 0)
        let other = manifest(harness, [], name: "empty.yaml")
        #expect(try await WorkerBinary.run(["sync", other, "--cache-dir", harness.cache, "--prune", "--force", "-q"]).code == 0)
        #expect(try await WorkerBinary.run(["gc", "--cache-dir", harness.cache, "--max-size", "0"]).code == 0)
        #expect(try await WorkerBinary.run(["clear", "--cache-dir", harness.cache]).code == 0)
        #expect(contents(tree) == ["f/a.txt": "content of a.txt\n"])
    }

    @Test func whatAKilledPublishLeftIsRemovedAndTwoPublishersTakeTurns() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let a = harness.serve("a.txt")
        let tree = harness.directory.path + "/site"
        let manifest = manifest(harness, [("/f/a.txt", a, nil)])
        #expect(try await sync(harness, manifest, tree: tree).code == 0)
        // A version half built, and a link never switched, by a run killed mid-publish.
        harness.directory.write(".site.worker/.building-v-0123456789abcdef-999/f/a.txt", "half\n")
        try FileManager.default.createSymbolicLink(
            atPath: harness.directory.path + "/.site.worker/.link-999",
            withDestinationPath: ".site.worker/v-0123456789abcdef")
        async let first = sync(harness, manifest, tree: tree)
        async let second = sync(harness, manifest, tree: tree)
        let (one, two) = try await (first, second)
        #expect(one.code == 0 && two.code == 0, "\(one.stderr)\(two.stderr)")
        #expect(versions(tree).count == 1, "\(versions(tree))")
        #expect(contents(tree) == ["f/a.txt": "content of a.txt\n"])
    }

    @Test func aDryRunSaysWhetherTheTreeWouldSwitch() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let a = harness.serve("a.txt")
        let tree = harness.directory.path + "/site"
        let manifest = manifest(harness, [("/f/a.txt", a, nil)])
        let before = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--tree", tree, "--dry-run"])
        #expect(before.code == 0 && before.stdout.contains("tree \(tree): would switch"), "\(before.stdout)")
        #expect(!FileManager.default.fileExists(atPath: tree))
        #expect(try await sync(harness, manifest, tree: tree).code == 0)
        let after = try await WorkerBinary.run(["plan", manifest, "--cache-dir", harness.cache, "--tree", tree])
        #expect(after.code == 0 && after.stdout.contains("tree \(tree): unchanged"), "\(after.stdout)")
    }

    @Test(.enabled(if: Conditions.canMount, "needs root for a tmpfs in a mount namespace (CI runs as root)"))
    func aTreeOnAnotherFileSystemIsMadeOfCopies() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let a = harness.serve("a.txt")
        let manifest = manifest(harness, [("/f/a.txt", a, "a.txt")])
        let out = harness.directory.path
        let mount = out + "/www"
        try FileManager.default.createDirectory(atPath: mount, withIntermediateDirectories: true)
        let script = """
            mount -t tmpfs -o size=1m tmpfs '\(mount)' || exit 97
            '\(WorkerBinary.path)' sync '\(manifest)' --cache-dir '\(out)/cache' --tree '\(mount)/site' --report '\(out)/r.json' -q; echo $? > '\(out)/code'
            cat '\(mount)/site/a.txt' > '\(out)/seen'
            stat -c %h '\(mount)/site/a.txt' > '\(out)/links'
            """
        let run = try await WorkerBinary.run(["-m", "/bin/sh", "-c", script], executable: "/usr/bin/unshare")
        try #require(run.code == 0, "unshare: \(run.code) \(run.stderr)")
        #expect(try String(contentsOfFile: out + "/code", encoding: .utf8) == "0\n")
        #expect(try String(contentsOfFile: out + "/seen", encoding: .utf8) == "content of a.txt\n")
        #expect(try String(contentsOfFile: out + "/links", encoding: .utf8) == "1\n", "a copy, not a link into the cache")
        let summary = try treeObject(out + "/r.json")
        #expect(summary["copied"] as? Int == 1 && summary["linked"] as? Int == 0)
    }
}
