import Foundation
import Testing
import WorkerStore
import WorkerSupport
import WorkerTestSupport

/// The built `worker` binary, end to end: output, exit codes, report file, files on disk.
@Suite(.hangLimit) struct CommandLineTests {
    /// The repository's shipped demo manifest.
    static let demoManifest: String = {
        var folder = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { folder.deleteLastPathComponent() }
        return folder.appendingPathComponent("manifests/demo.yaml").path
    }()

    func json(_ path: String) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
    }

    /// libcurl is loaded at the first download: a command that downloads nothing never loads it
    /// (nor the libraries it pulls in), so it starts as fast as before the move to libcurl.
    @Test func aRunThatDownloadsNothingNeverLoadsLibcurl() async throws {
        let directory = TemporaryDirectory()
        let plan = try await WorkerBinary.run(
            ["plan", Self.demoManifest, "--cache-dir", directory.path + "/cache"],
            environment: ["LD_DEBUG": "libs"])
        #expect(plan.code == 0)
        #expect(plan.stderr.contains("libsqlite3"), "the loader's trace is there to read")
        #expect(!plan.stderr.contains("libcurl"), "libcurl was loaded by a plan")
    }

    /// libcurl is loaded by a run that downloads over the network, and ahead by a sync into a
    /// cache without an index: `--offline`, `--dry-run` and a run over an index with nothing to
    /// fetch never load it.
    @Test func libcurlLoadsOnlyForARunThatDownloads() async throws {
        let directory = TemporaryDirectory()
        func loadsLibcurl(_ arguments: [String], code: Int32 = 0) async throws -> Bool {
            let result = try await WorkerBinary.run(arguments, environment: ["LD_DEBUG": "libs"])
            #expect(result.code == code, "\(arguments): \(result.stderr.suffix(300))")
            #expect(result.stderr.contains("libsqlite3"), "the loader's trace is there to read")
            return result.stderr.contains("libcurl")
        }
        let cache = directory.path + "/cache"
        let offline = try await loadsLibcurl(["sync", Self.demoManifest, "--cache-dir", directory.path + "/offline", "--offline"], code: 1)
        #expect(!offline, "offline: not in the cache")
        let dry = try await loadsLibcurl(["sync", Self.demoManifest, "--cache-dir=" + directory.path + "/dry", "--dry-run"])
        #expect(!dry)
        // The demo lists local files only: loaded ahead for nothing into a new cache (the guess's
        // known cost; the run itself needs no transport), not over an index.
        let fresh = try await loadsLibcurl(["sync", Self.demoManifest, "--cache-dir", cache])
        #expect(fresh)
        let warm = try await loadsLibcurl(["sync", Self.demoManifest, "--cache-dir", cache])
        #expect(!warm, "nothing to fetch")
        let remote = directory.write("remote.yaml", "version: 1\nentries:\n  - url: http://127.0.0.1:9/a\n")
        let http = try await loadsLibcurl(["sync", remote, "--cache-dir", cache, "--retries", "0"], code: 1)
        #expect(http, "an http entry")
    }

    /// A usage error ends with exit 2, never a crash.
    @Test func aUsageErrorWhileLibcurlLoadsExitsCleanly() async throws {
        let directory = TemporaryDirectory()
        for run in 0..<3 {
            let result = try await WorkerBinary.run([
                "sync", Self.demoManifest, "--cache-dir", directory.path + "/cache\(run)", "--jobs", "0",
            ])
            #expect(result.code == 2, "run \(run): \(result.stderr)")
            #expect(result.stderr.contains("--jobs must be between 1 and 1024"))
        }
    }

    @Test func demoSyncsThenReportsAllUnchanged() async throws {
        let directory = TemporaryDirectory()
        let cache = directory.path + "/cache"
        let first = try await WorkerBinary.run(["sync", Self.demoManifest, "--cache-dir", cache, "--report", directory.path + "/r.json"])
        #expect(first.code == 0, "\(first.stderr)")
        #expect(first.stdout.contains("worker sync: 6 entries from 1 manifest (demo)"))
        #expect(first.stdout.contains("added 6, updated 0, reused 0, unchanged 0, failed 0"))
        #expect(first.stdout.contains("demo/ada.png"))
        let report = try json(directory.path + "/r.json")
        #expect(report["schema"] as? Int == 1)
        #expect(report["cache_dir"] as? String == cache)
        let totals = try #require(report["totals"] as? [String: Any])
        #expect(totals["added"] as? Int == 6 && totals["entries"] as? Int == 6 && totals["failed"] as? Int == 0)
        let entries = try #require(report["entries"] as? [[String: Any]])
        #expect(entries.count == 6)
        for entry in entries {
            let path = try #require(entry["path"] as? String)
            #expect(FileManager.default.fileExists(atPath: path))
            #expect(path.hasPrefix(cache + "/objects/sha256/"))
        }
        let manifests = try #require(report["manifests"] as? [[String: Any]])
        #expect(manifests.first?["name"] as? String == "demo" && manifests.first?["entries"] as? Int == 6)

        // Options may also come before the positional arguments.
        let second = try await WorkerBinary.run(["sync", "--cache-dir", cache, Self.demoManifest, "--report", directory.path + "/r2.json"])
        #expect(second.code == 0)
        #expect(second.stdout.contains("added 0, updated 0, reused 0, unchanged 6, failed 0"))
        #expect(
            (try json(directory.path + "/r2.json")["entries"] as? [[String: Any]])?.isEmpty == true,
            "unchanged entries are left out of the report")
        let run96 = try await WorkerBinary.run([
            "sync", "--cache-dir", cache, Self.demoManifest, "--report", directory.path + "/r3.json", "--report-all",
        ])
        #expect(run96.code == 0, "the demo syncs: \(run96.code) \(run96.stderr)")
        let all = try #require(try json(directory.path + "/r3.json")["entries"] as? [[String: Any]])
        #expect(all.count == 6 && all.allSatisfy { $0["status"] as? String == "unchanged" && $0["path"] != nil })
    }

    @Test func cacheDirectoryComesFromTheEnvironment() async throws {
        let directory = TemporaryDirectory()
        let result = try await WorkerBinary.run(
            ["sync", Self.demoManifest, "--quiet"],
            environment: ["WORKER_CACHE_DIR": directory.path + "/envcache"])
        #expect(result.code == 0)
        #expect(result.stdout.isEmpty, "--quiet prints nothing on stdout")
        #expect(FileManager.default.fileExists(atPath: directory.path + "/envcache/index.sqlite"))
        let xdg = try await WorkerBinary.run(["sync", Self.demoManifest, "-q"], environment: ["XDG_CACHE_HOME": directory.path + "/xdg"])
        #expect(xdg.code == 0)
        #expect(FileManager.default.fileExists(atPath: directory.path + "/xdg/worker/index.sqlite"))
    }

    @Test func badManifestExits2WithItsPositionAndTouchesNothing() async throws {
        let directory = TemporaryDirectory()
        let manifest = directory.write(
            "bad.yaml", "version: 1\nentries:\n  - url: http://127.0.0.1:9/a\n    hash: sha256:nothex\n  - url: gopher://x/\n")
        let cache = directory.path + "/cache"
        let result = try await WorkerBinary.run(["sync", manifest, "--cache-dir", cache])
        #expect(result.code == 2)
        #expect(result.stderr.contains("\(manifest):4:11: bad hash: sha256 hash needs 64 hex digits, got 6"))
        #expect(result.stderr.contains("\(manifest):5:10: URL scheme 'gopher' is not allowed (only http, https, s3, oci and sftp)"))
        #expect(!FileManager.default.fileExists(atPath: cache), "nothing was touched")
    }

    @Test func usageErrorsExit2() async throws {
        #expect(try await WorkerBinary.run(["sync"]).code == 2)
        #expect(try await WorkerBinary.run(["sync", "m.yaml", "--jobs", "0"]).code == 2)
        let streams = try await WorkerBinary.run(["sync", "m.yaml", "--max-streams", "0"])
        #expect(streams.code == 2 && streams.stderr.contains("--max-streams must be between 1 and 1000"))
        #expect(try await WorkerBinary.run(["sync", "m.yaml", "--max-size", "lots"]).code == 2)
        #expect(try await WorkerBinary.run(["frobnicate"]).code == 2)
        #expect(try await WorkerBinary.run(["--help"]).code == 0)
    }

    /// A command line that starts with a subcommand is parsed by it directly (BENCHMARKS.md as of 278b2e0,
    /// "URLs as values"); help and usage errors are still the root's: they name `worker` and list
    /// `--version`.
    @Test func helpAndUsageErrorsOfASubcommandNameTheProgram() async throws {
        for words in [["sync", "--help"], ["sync", "m.yaml", "-h"], ["status", "--help"]] {
            let help = try await WorkerBinary.run(words)
            #expect(
                help.code == 0 && help.stdout.contains("USAGE: worker \(words[0]) ") && help.stdout.contains("--version"),
                "\(words): \(help.stdout)")
        }
        let missing = try await WorkerBinary.run(["sync", "--report-all"])
        #expect(missing.code == 2 && missing.stderr.contains("Usage: worker sync "), "\(missing.stderr)")
    }

    /// Options read before the command is parsed, by the same parser, and values checked once, in
    /// the option's words, with the command's usage.
    @Test func theFrontEndSaysUsageErrorsInTheOptionsOwnWords() async throws {
        // A mistyped command is named with a suggestion, as a JSON line when JSON was asked for,
        // wherever `--log-format` stands.
        let mistyped = try await WorkerBinary.run(["--log-format", "json", "snyc"])
        #expect(mistyped.code == 2)
        let line = try #require(mistyped.stderr.split(separator: "\n").first)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["message"] as? String == "worker: unknown command 'snyc'; did you mean 'sync'?")
        #expect(object["level"] as? String == "error")

        let hash = try await WorkerBinary.run(["get", "http://127.0.0.1:9/x", "--hash", "zz"])
        #expect(hash.code == 2)
        #expect(hash.stderr.hasPrefix("Error: --hash: bare hex hash of 2 characters"))
        #expect(hash.stderr.contains("Usage: worker get [<options>] <url>"))

        // The tier's URL is refused without its password; from the environment, named as such.
        let tier = try await WorkerBinary.run(["sync", "m.yaml", "--remote-cache", "ftp://me:pa55word@tier/"])
        #expect(tier.code == 2)
        #expect(tier.stderr.contains("--remote-cache: ") && tier.stderr.contains("is not an http(s) URL"))
        #expect(!tier.stderr.contains("pa55word"))
        let fromEnvironment = try await WorkerBinary.run(["sync", "m.yaml"], environment: ["WORKER_REMOTE_CACHE": "http://a@b@tier"])
        #expect(fromEnvironment.code == 2 && fromEnvironment.stderr.contains("WORKER_REMOTE_CACHE: "))

        // Settings found unusable as the run starts (after parsing) read as a parse error does.
        let jobs = try await WorkerBinary.run(["sync", "m.yaml", "--jobs", "0"])
        #expect(
            jobs.stderr == "Error: --jobs must be between 1 and 1024\nUsage: worker sync [<options>] <manifests> ...\n"
                + "  See 'worker sync --help' for more information.\n")
        let shard = try await WorkerBinary.run(["sync", "m.yaml"], environment: ["JOB_COMPLETION_INDEX": "1"])
        #expect(shard.code == 2 && shard.stderr.hasPrefix("Error: JOB_COMPLETION_INDEX is set"))
    }

    @Test func failedEntryExits1AndTheReportSaysWhy() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let manifest = harness.manifest([("/f/ok", harness.serve("ok")), ("/status/404", Array("x".utf8))])
        let reportPath = harness.directory.path + "/report.json"
        let result = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--report", reportPath, "--retries", "0"])
        #expect(result.code == 1)
        #expect(result.stderr.contains("failed: \(harness.origin.url("/status/404")): http_status: HTTP 404"))
        let report = try json(reportPath)
        let entries = try #require(report["entries"] as? [[String: Any]])
        let failed = try #require(entries.first { $0["status"] as? String == "failed" })
        #expect(failed["reason"] as? String == "http_status")
        #expect(failed["http_status"] as? Int == 404)
        #expect(failed["attempts"] as? Int == 1)
        #expect(failed["stale"] as? Bool == false)
        #expect((report["totals"] as? [String: Any])?["failed"] as? Int == 1)
    }

    @Test func lockedCacheExits3AfterWaitLock() async throws {
        let directory = TemporaryDirectory()
        let cache = directory.path + "/cache"
        #expect(try await WorkerBinary.run(["sync", Self.demoManifest, "--cache-dir", cache]).code == 0)
        let held = try await CacheLock(directory: cache, wait: 0, context: RunContext())
        let result = try await WorkerBinary.run(["sync", Self.demoManifest, "--cache-dir", cache, "--wait-lock", "0.3"])
        #expect(result.code == 3)
        #expect(result.stderr.contains("cache is locked by another run (pid \(getpid()))"))
        // Every command that writes takes --wait-lock as a duration; one that reads never waits.
        let verify = try await WorkerBinary.run(["verify", "--repair", "--cache-dir", cache, "--wait-lock", "300ms"])
        #expect(verify.code == 3)
        #expect(try await WorkerBinary.run(["verify", "--cache-dir", cache, "--wait-lock", "300ms"]).code == 0)
        #expect(try await WorkerBinary.run(["gc", "--cache-dir", cache, "--wait-lock", "soon"]).code == 2)
        withExtendedLifetime(held) {}
    }

    @Test func unusableCacheExits4() async throws {
        let directory = TemporaryDirectory()
        let notADirectory = directory.write("file", "x")
        let result = try await WorkerBinary.run(["sync", Self.demoManifest, "--cache-dir", notADirectory])
        #expect(result.code == 4)
        #expect(result.stderr.contains("cache unusable: \(notADirectory)"))

        let corrupt = directory.path + "/corrupt"
        directory.write("corrupt/index.sqlite", String(repeating: "garbage ", count: 600))
        let second = try await WorkerBinary.run(["sync", Self.demoManifest, "--cache-dir", corrupt])
        #expect(second.code == 4)
    }

    @Test func planAndDryRunChangeNothing() async throws {
        let directory = TemporaryDirectory()
        let cache = directory.path + "/cache"
        let plan = try await WorkerBinary.run(["plan", Self.demoManifest, "--cache-dir", cache, "--report", directory.path + "/p.json"])
        #expect(plan.code == 0)
        #expect(plan.stdout.contains("worker plan: 6 entries"))
        #expect(plan.stdout.contains("to add 6, to update 0, to reuse 0, unchanged 0"))
        #expect(!FileManager.default.fileExists(atPath: cache))
        #expect(try json(directory.path + "/p.json")["dry_run"] as? Bool == true)

        #expect(try await WorkerBinary.run(["sync", Self.demoManifest, "--cache-dir", cache]).code == 0)
        let index = cache + "/index.sqlite"
        let before = try FileManager.default.attributesOfItem(atPath: index)[.modificationDate] as? Date
        let dry = try await WorkerBinary.run(["sync", "--dry-run", Self.demoManifest, "--cache-dir", cache])
        #expect(dry.code == 0)
        #expect(dry.stdout.contains("unchanged 6"))
        #expect(try FileManager.default.attributesOfItem(atPath: index)[.modificationDate] as? Date == before)
    }

    @Test func credentialsNeverAppearInOutput() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let bytes = harness.serve("secret")
        let manifest = harness.directory.write(
            "s.yaml",
            """
            version: 1
            headers:
              Authorization: "Bearer ${WORKER_SECRET_TOKEN}"
            entries:
              - url: http://alice:hunter2@127.0.0.1:\(harness.origin.port)/f/secret
                hash: sha256:\(sha256(bytes))
              - url: http://alice:hunter2@127.0.0.1:\(harness.origin.port)/status/500
            """)
        let reportPath = harness.directory.path + "/r.json"
        let result = try await WorkerBinary.run(
            ["sync", manifest, "--cache-dir", harness.cache, "--report", reportPath, "--report-all", "--retries", "0", "-v"],
            environment: ["WORKER_SECRET_TOKEN": "tok-XYZZY-42"])
        #expect(result.code == 1)
        #expect(harness.origin.lastHeaders("/f/secret")?["authorization"] == "Bearer tok-XYZZY-42")
        let report = try String(contentsOfFile: reportPath, encoding: .utf8)
        for text in [result.stdout, result.stderr, report] {
            #expect(!text.contains("tok-XYZZY-42"))
            #expect(!text.contains("hunter2"))
            #expect(!text.contains("alice"))
        }
        #expect(report.contains("http://127.0.0.1:\(harness.origin.port)/f/secret"))

        let missing = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache])
        #expect(missing.code == 2)
        #expect(missing.stderr.contains("environment variable 'WORKER_SECRET_TOKEN' is not set"))
    }
}
