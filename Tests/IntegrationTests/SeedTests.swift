import Foundation
import Testing
import WorkerSupport
import WorkerTestSupport

/// What the libraries and tools `worker` descends from offer: forced refresh, rate limits,
/// the version, completions. Through the binary.
@Suite(.hangLimit) struct SeedTests {
    @Test func versionIsPrintedAndReported() async throws {
        let version = try await WorkerBinary.run(["--version"])
        #expect(version.code == 0)
        #expect(version.stdout == "worker \(WorkerVersion.current)\n")
        let directory = TemporaryDirectory()
        let report = directory.path + "/r.json"
        #expect(
            try await WorkerBinary.run(["sync", CommandLineTests.demoManifest, "--cache-dir", directory.path + "/c", "--report", report])
                .code == 0)
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])
        #expect(document["worker_version"] as? String == WorkerVersion.current)
    }

    @Test(arguments: ["bash", "zsh", "fish"])
    func completionScripts(shell: String) async throws {
        let result = try await WorkerBinary.run(["completion", shell])
        #expect(result.code == 0)
        #expect(result.stdout.contains("worker"))
        for word in ["sync", "verify", "cache-dir"] {
            #expect(result.stdout.contains(word), "\(shell) completes \(word)")
        }
        #expect(try await WorkerBinary.run(["completion", "powershell"]).code == 2)
    }

    @Test func helpIsGroupedWithExamples() async throws {
        let help = try await WorkerBinary.run(["sync", "--help"])
        #expect(help.code == 0)
        for title in ["NETWORK", "REPORTS AND OUTPUT", "SCHEDULING", "CACHE", "Examples:"] {
            #expect(help.stdout.contains(title), "\(title)\n\(help.stdout)")
        }
        for command in [
            "get", "plan", "status", "verify", "gc", "path", "rm", "clear", "export", "fingerprint", "manifest",
            "completion",
        ] {
            let shown = try await WorkerBinary.run([command, "--help"])
            #expect(shown.code == 0, "\(command): \(shown.stderr)")
            let text = shown.stdout
            let examples =
                text.components(separatedBy: "Examples:").last?.split(separator: "\n")
                .prefix { !$0.isEmpty }.filter { $0.hasPrefix("  worker ") || $0.contains("worker ") } ?? []
            #expect(text.contains("Examples:") && examples.count >= 2, "\(command): \(text)")
        }
    }

    @Test func refreshDownloadsEverythingAgain() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let pinned = harness.serve("pinned", "pinned bytes\n")
        harness.serve("loose", "first version\n")
        let manifest = harness.manifest([("/f/pinned", pinned), ("/f/loose", nil)])
        #expect(try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache]).code == 0)
        #expect(harness.origin.totalRequests == 2)
        // Without --refresh a warm run asks nothing; with it, every entry is fetched and verified.
        #expect(try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache]).code == 0)
        #expect(harness.origin.totalRequests == 2)
        harness.serve("loose", "second version\n")
        let report = harness.directory.path + "/r.json"
        let refreshed = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--refresh", "--report", report])
        #expect(refreshed.code == 0, "\(refreshed.stderr)")
        #expect(harness.origin.totalRequests == 4)
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])
        let totals = try #require(document["totals"] as? [String: Any])
        #expect(totals["refreshed"] as? Int == 2 && totals["unchanged"] as? Int == 1 && totals["updated"] as? Int == 1, "\(totals)")
        #expect(try harness.cachedBytes("/f/loose") == Array("second version\n".utf8))
        #expect(refreshed.stdout.contains("refreshed 2"))
        // A refreshed body that no longer matches its pinned hash fails; the verified copy stays.
        harness.serve("pinned", "tampered\n")
        let tampered = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--refresh"])
        #expect(tampered.code == 1 && tampered.stderr.contains("hash_mismatch"))
        #expect(try harness.cachedBytes("/f/pinned") == pinned)
    }

    @Test func limitRateIsSharedByTheRun() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        // Two bodies of 384 KiB at 256 KiB/s for the whole run: about 3 s, whatever the connections.
        let bodies = (0..<2).map { index in (0..<(384 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) } }
        for (index, body) in bodies.enumerated() { harness.origin.set("/f/big\(index)", body) }
        let manifest = harness.manifest(bodies.enumerated().map { ("/f/big\($0.offset)", $0.element) })
        let metrics = harness.directory.path + "/m.prom"
        let report = harness.directory.path + "/r.json"
        let started = Date()
        let result = try await WorkerBinary.run([
            "sync", manifest, "--cache-dir", harness.cache, "--limit-rate", "256K",
            "--metrics", metrics, "--report", report,
        ])
        let elapsed = Date().timeIntervalSince(started)
        #expect(result.code == 0, "\(result.stderr)")
        #expect(elapsed >= 2.5, "768 KiB at 256 KiB/s took \(elapsed) s")
        #expect(
            try String(contentsOfFile: metrics, encoding: .utf8).contains(
                "worker_sync_limit_rate_bytes_per_second{manifests=\"test\"} 262144"))
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])
        #expect((document["limits"] as? [String: Any])?["limit_rate_bytes_per_second"] as? Int == 262_144)
        #expect(try await WorkerBinary.run(["sync", manifest, "--limit-rate", "fast"]).code == 2)
    }

    @Test func maxRequestsPerSecondPacesEachOrigin() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let keys = (0..<11).map { "r\($0)" }
        let manifest = harness.manifest(keys.map { ("/gen/\($0)", TestOrigin.generated($0)) })
        let report = harness.directory.path + "/r.json"
        let started = Date()
        let result = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--max-rps", "5", "--report", report])
        let elapsed = Date().timeIntervalSince(started)
        #expect(result.code == 0)
        #expect(elapsed >= 1.9, "11 requests at 5 per second took \(elapsed) s")
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])
        #expect((document["limits"] as? [String: Any])?["max_requests_per_second"] as? Double == 5)
    }
}

/// `worker get` and `worker manifest`, through the binary.
@Suite(.hangLimit) struct LookupAndManifestTests {
    @Test func getReadsThroughTheCache() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let bytes = harness.serve("a.png", "png bytes\n")
        let url = harness.origin.url("/f/a.png")
        let miss = try await WorkerBinary.run(["get", url, "--cache-dir", harness.cache])
        #expect(miss.code == 0, "\(miss.stderr)")
        #expect(miss.stdout == harness.objectPath(sha256(bytes)) + "\n")
        #expect(harness.origin.totalRequests == 1)
        // A hit makes no request, also with the right hash pinned.
        let hit = try await WorkerBinary.run(["get", url, "--cache-dir", harness.cache, "--hash", "sha256:\(sha256(bytes))"])
        #expect(hit.code == 0 && hit.stdout == miss.stdout)
        #expect(harness.origin.totalRequests == 1)
        // The bytes to a file or to stdout.
        let file = harness.directory.path + "/out.png"
        #expect(try await WorkerBinary.run(["get", url, "--cache-dir", harness.cache, "-o", file]).code == 0)
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: file))) == bytes)
        let piped = try await WorkerBinary.run(["get", url, "--cache-dir", harness.cache, "-o", "-"])
        #expect(Array(piped.stdout.utf8) == bytes)
        #expect(harness.origin.totalRequests == 1)
        // The entry exists like any other: path finds it, gc ages it, status counts it.
        #expect(try await WorkerBinary.run(["path", url, "--cache-dir", harness.cache]).stdout == miss.stdout)

        // A wrong hash is a hash_mismatch, exit 1, nothing stored.
        harness.serve("b.png", "other bytes\n")
        let wrong = try await WorkerBinary.run([
            "get", harness.origin.url("/f/b.png"), "--cache-dir", harness.cache,
            "--hash", "sha256:" + String(repeating: "0", count: 64),
        ])
        #expect(wrong.code == 1)
        #expect(wrong.stderr.contains("hash_mismatch"), "\(wrong.stderr)")
        #expect(harness.objects() == [sha256(bytes)])
        let missing = try await WorkerBinary.run(["get", harness.origin.url("/status/404"), "--cache-dir", harness.cache])
        #expect(missing.code == 1 && missing.stderr.contains("HTTP 404"))
        #expect(try await WorkerBinary.run(["get", "ftp://example.com/a", "--cache-dir", harness.cache]).code == 2)
        #expect(try await WorkerBinary.run(["get", url, "--hash", "nope"]).code == 2)
    }

    @Test func aFolderBecomesAManifestThatSyncsBack() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let folder = harness.directory.path + "/public"
        let files = [
            "a.png": "A", "sub/b.png": "B", "sub/deeper/c d.png": "C with a space", "ü.txt": "unicode name",
            ".hidden": "skipped",
        ]
        for (name, text) in files {
            harness.directory.write("public/" + name, text)
        }
        let result = try await WorkerBinary.run(["manifest", folder, "--base-url", harness.origin.url("/assets")])
        #expect(result.code == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").filter { $0.hasPrefix("  - url:") }
        #expect(
            lines == [
                #"  - url: "a.png""#, #"  - url: "sub/b.png""#, #"  - url: "sub/deeper/c%20d.png""#,
                #"  - url: "%C3%BC.txt""#,
            ], "stable order, relative, encoded: \(result.stdout)")
        #expect(result.stdout.contains("sha256:\(sha256("A"))"))
        #expect(!result.stdout.contains("hidden"))
        // Written to a file, read back by the reader, synced from a server of the same folder.
        let manifest = harness.directory.path + "/public.yaml"
        #expect(try await WorkerBinary.run(["manifest", folder, "--base-url", harness.origin.url("/assets/"), "-o", manifest]).code == 0)
        for (name, text) in files where !name.hasPrefix(".") {
            let encoded = name.split(separator: "/").map { String($0).addingPercentEncoding(withAllowedCharacters: .urlPathAllowed)! }
                .joined(separator: "/")
            harness.origin.set("/assets/" + encoded, text)
        }
        let report = harness.directory.path + "/r.json"
        let synced = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--report", report])
        #expect(synced.code == 0, "\(synced.stderr)")
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])
        let entries = try #require(document["entries"] as? [[String: Any]])
        #expect(
            entries.count == 4
                && entries.allSatisfy { $0["status"] as? String == "added" && ($0["hash"] as? String)?.hasPrefix("sha256:") == true })
        // Running it again gives the same bytes; it never overwrites a file it did not write.
        #expect(try await WorkerBinary.run(["manifest", folder, "--base-url", harness.origin.url("/assets/"), "-o", manifest]).code == 0)
        let foreign = harness.directory.write("notes.yaml", "version: 1\nentries: []\n")
        #expect(try await WorkerBinary.run(["manifest", folder, "--base-url", harness.origin.url("/"), "-o", foreign]).code == 2)
        #expect(try await WorkerBinary.run(["manifest", folder]).code == 2, "--base-url is required with folders")
    }

    @Test func urlsArePinnedThroughTheCache() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let one = harness.serve("one", "first\n")
        let two = harness.serve("two", "second\n")
        let list = harness.directory.write(
            "urls.txt",
            """
            # avatars
            \(harness.origin.url("/f/one"))

            \(harness.origin.url("/f/two"))
            \(harness.origin.url("/f/one"))
            """)
        let manifest = harness.directory.path + "/pinned.yaml"
        let result = try await WorkerBinary.run(["manifest", "--urls", list, "-o", manifest, "--cache-dir", harness.cache])
        #expect(result.code == 0, "\(result.stderr)")
        #expect(harness.origin.totalRequests == 2, "each URL once")
        let text = try String(contentsOfFile: manifest, encoding: .utf8)
        #expect(text.contains("sha256:\(sha256(one))") && text.contains("sha256:\(sha256(two))"))
        #expect(text.contains("name: \"pinned\""))
        // The cache is warm: a sync of the pinned manifest asks nothing.
        let warm = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache])
        #expect(warm.code == 0 && warm.stdout.contains("unchanged 2"), "\(warm.stdout)")
        #expect(harness.origin.totalRequests == 2)
        // From stdin; a URL that fails is left out (exit 1); a line that is no URL is located (exit 2).
        let failing = harness.directory.write("failing.txt", "\(harness.origin.url("/f/one"))\n\(harness.origin.url("/status/404"))\n")
        let partial = try await WorkerBinary.run(
            [
                "sh", "-c", "\"$0\" manifest --urls - --cache-dir \"$1\" < \"$2\"", WorkerBinary.path,
                harness.cache, failing,
            ].dropFirst().map { $0 }, executable: "/bin/sh")
        #expect(partial.code == 1, "\(partial.stderr)")
        #expect(partial.stdout.contains("/f/one") && !partial.stdout.contains("/status/404"))
        let bad = harness.directory.write("bad.txt", "\(harness.origin.url("/f/one"))\n\nnot a url\n")
        let located = try await WorkerBinary.run(["manifest", "--urls", bad, "--cache-dir", harness.cache])
        #expect(located.code == 2 && located.stderr.contains("bad.txt:3:"), "\(located.stderr)")
    }
}

/// The manual in docs/ is generated from the command definitions (scripts/make-man.sh); it must
/// name every subcommand and every option `--help` shows, or it has gone stale.
@Suite(.hangLimit) struct ManualTests {
    static let manual: String = {
        var folder = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { folder.deleteLastPathComponent() }
        return (try? String(contentsOf: folder.appendingPathComponent("docs/worker.1"), encoding: .utf8)) ?? ""
    }()

    @Test func theManualNamesEverySubcommandAndOption() async throws {
        #expect(Self.manual.hasPrefix(".\\\" \"Generated by swift-argument-parser\""))
        let help = try await WorkerBinary.run(["--help"]).stdout
        let subcommands = help.split(separator: "\n").drop { !$0.hasPrefix("SUBCOMMANDS:") }.dropFirst()
            .compactMap { line in line.wholeMatch(of: /\ \ ([a-z]+)\ .*/).map { String($0.output.1) } }
        #expect(subcommands.count >= 13, "\(subcommands)")
        for name in subcommands {
            #expect(Self.manual.contains(".It Em \(name)"), "docs/worker.1 lacks \(name): run scripts/make-man.sh")
            let options = try await WorkerBinary.run([name, "--help"]).stdout
            for option in options.matches(of: /--([a-z][a-z-]+)/).map({ String($0.output.1) }) where option != "help" {
                #expect(
                    Self.manual.contains("Fl -\(option)") || Self.manual.contains(", -\(option)"),
                    "docs/worker.1 lacks \(name) --\(option): run scripts/make-man.sh")
            }
        }
    }
}
