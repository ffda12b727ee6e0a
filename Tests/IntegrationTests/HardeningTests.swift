import Crypto
import Foundation
import Testing
import WorkerTestSupport

@testable import WorkerStore

/// What a hostile index, manifest or folder could make the binary do, and what it must not.
@Suite(.hangLimit) struct HardeningTests {
    /// A cache synced from the demo manifest (local files, no network), with its report.
    private func demoCache(_ directory: TemporaryDirectory) async throws -> (cache: String, urls: [String]) {
        let cache = directory.path + "/cache"
        let report = directory.path + "/r.json"
        let result = try await WorkerBinary.run(["sync", CommandLineTests.demoManifest, "--cache-dir", cache, "--report", report])
        try #require(result.code == 0, "\(result.stderr)")
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])
        let entries = try #require(document["entries"] as? [[String: Any]])
        return (cache, entries.compactMap { $0["url"] as? String }.sorted())
    }

    /// Runs SQL on a cache's index, as someone who restored a tampered CI cache would have.
    private func tamper(_ cache: String, _ sql: String) throws {
        let database = try SQLiteDatabase(path: cache + "/index.sqlite", create: false)
        try database.execute(sql)
    }

    @Test func objectNamesFromTheIndexAreNeverPaths() async throws {
        let directory = TemporaryDirectory()
        let (cache, urls) = try await demoCache(directory)
        // A file outside the cache that a crafted row points at.
        let victim = directory.write("victim/secret.txt", "not yours\n")
        let escape = String(repeating: "../", count: 8) + String(victim.dropFirst())
        try tamper(cache, "UPDATE entries SET object = '\(escape)' WHERE url = '\(urls[0])'")

        for layout in ["hash", "sdwebimage", "kingfisher"] {
            let export = directory.path + "/export-" + layout
            let exported = try await WorkerBinary.run(["export", "--layout", layout, export, "--cache-dir", cache])
            #expect(exported.code == 0, "\(exported.stderr)")
            let names = (try? FileManager.default.contentsOfDirectory(atPath: export)) ?? []
            #expect(!names.isEmpty)
            for name in names {
                let bytes = try String(contentsOfFile: export + "/" + name, encoding: .isoLatin1)
                #expect(bytes != "not yours\n", "\(layout): a file from outside the cache was linked into the export")
            }
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: directory.path + "/victim") == ["secret.txt"],
                "\(layout): nothing is written beside the file the row points at")
        }

        let verify = try await WorkerBinary.run(["verify", "--cache-dir", cache])
        #expect(verify.code == 1, "a damaged row is a real problem")
        #expect(verify.stdout.contains("1 damaged index row"), "\(verify.stdout)")

        let gc = try await WorkerBinary.run(["gc", "--max-age", "0", "--max-size", "1", "--cache-dir", cache])
        #expect(gc.code == 0, "gc does not trap on a damaged row: \(gc.code) \(gc.stderr)")
        #expect(FileManager.default.fileExists(atPath: victim), "nothing outside the cache is deleted")

        let repaired = try await WorkerBinary.run(["verify", "--repair", "--cache-dir", cache])
        #expect(repaired.code == 0, "\(repaired.stdout)\(repaired.stderr)")
        #expect(try await WorkerBinary.run(["verify", "--cache-dir", cache]).code == 0)
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "not yours\n")
    }

    @Test func removingADamagedRowTouchesNoFile() async throws {
        let directory = TemporaryDirectory()
        let (cache, urls) = try await demoCache(directory)
        let victim = directory.write("victim/keep.txt", "keep\n")
        try tamper(
            cache, "UPDATE entries SET object = '\(String(repeating: "../", count: 8))\(victim.dropFirst())' WHERE url = '\(urls[1])'")
        let removed = try await WorkerBinary.run(["rm", urls[1], "--cache-dir", cache])
        #expect(removed.code == 0, "rm does not trap: \(removed.code) \(removed.stderr)")
        #expect(FileManager.default.fileExists(atPath: victim))
        #expect(try await WorkerBinary.run(["path", urls[1], "--cache-dir", cache]).code == 1)
        // A sync puts the entry back as if it had never been there.
        let again = try await WorkerBinary.run(["sync", CommandLineTests.demoManifest, "--cache-dir", cache])
        #expect(again.code == 0)
        #expect(again.stdout.contains("added 1"), "\(again.stdout)")
    }

    @Test func repairNeverFetchesWithoutTheStoredHash() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let bytes = harness.serve("a.bin", "the real bytes\n")
        // An SRI sha384 entry: the index stores it as sha384:<hex>.
        let digest = Data(SHA384Digest.of(bytes)).base64EncodedString()
        let manifest = harness.directory.write(
            "m.yaml",
            """
            version: 1
            entries:
              - url: \(harness.origin.url("/f/a.bin"))
                hash: sha384-\(digest)
            """)
        let first = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache])
        try #require(first.code == 0, "\(first.stderr)")
        // The object disappears and the origin now serves other bytes.
        for object in harness.objects() { unlink(harness.objectPath(object)) }
        harness.serve("a.bin", "substituted bytes\n")
        let repaired = try await WorkerBinary.run(["verify", "--repair", "--cache-dir", harness.cache])
        #expect(repaired.code == 0, "\(repaired.stdout)\(repaired.stderr)")
        #expect(harness.objects().isEmpty, "bytes that do not match the stored sha384 are not stored")
        #expect(try harness.records().isEmpty, "the row is dropped; the next sync adds it back")

        // A stored hash that does not parse drops the row instead of turning the check off.
        harness.serve("a.bin", "the real bytes\n")
        #expect(try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache]).code == 0)
        try tamper(harness.cache, "UPDATE entries SET hash = 'sha384:zz'")
        for object in harness.objects() { unlink(harness.objectPath(object)) }
        harness.serve("a.bin", "substituted bytes\n")
        let again = try await WorkerBinary.run(["verify", "--repair", "--cache-dir", harness.cache])
        #expect(again.code == 0)
        #expect(harness.objects().isEmpty)
    }

    @Test func outputsAreNotWrittenThroughPlantedLinks() async throws {
        let directory = TemporaryDirectory()
        let victim = directory.write("victim.txt", "precious\n")
        let out = directory.path + "/out"
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        // Links under every name the old scheme (`.NAME.PID.tmp`) could have used near our pid.
        let pid = Int(getpid())
        for candidate in pid..<(pid + 3000) {
            for name in ["r.json", "j.xml", "m.prom"] {
                symlink(victim, out + "/.\(name).\(candidate).tmp")
            }
        }
        let result = try await WorkerBinary.run([
            "sync", CommandLineTests.demoManifest, "--cache-dir", directory.path + "/cache",
            "--report", out + "/r.json", "--junit", out + "/j.xml", "--metrics", out + "/m.prom",
        ])
        #expect(result.code == 0, "\(result.stderr)")
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious\n")
        for name in ["r.json", "j.xml", "m.prom"] {
            var info = stat()
            #expect(lstat(out + "/" + name, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG, "\(name) is a regular file")
        }
    }

    /// A new cache's run starts loading libcurl at the first remote entry, before the rest of
    /// the manifest is read; one that then stops at a manifest error must not exit while the
    /// libraries are still being loaded (it crashed in the exit's destructors, ~1 run in 20).
    /// Made certain rather than likely: the libcurl found first (LD_LIBRARY_PATH) takes half a
    /// second to load, so the error always comes while it loads.
    @Test func aManifestErrorWhileLibcurlLoadsExitsCleanly() async throws {
        let directory = TemporaryDirectory()
        try await directory.buildStubLibcurl(
            source: """
                #include <unistd.h>
                __attribute__((constructor)) static void slowly(void) { usleep(500000); }
                """)
        let manifest = directory.write(
            "env.yaml", "version: 1\nheaders:\n  X-Token: \"${TOKEN}\"\nentries:\n  - url: http://127.0.0.1:9/a\n")
        for run in 0..<3 {
            let result = try await WorkerBinary.run(
                ["sync", manifest, "--cache-dir", directory.path + "/cache\(run)"],
                environment: ["TOKEN": "a\r\nInjected: 1", "LD_LIBRARY_PATH": directory.path + "/lib"])
            #expect(result.code == 2 && !result.signalled, "run \(run): \(result.stderr)")
            #expect(result.seconds >= 0.5, "the run waited for the load it started (\(result.seconds) s)")
        }
        // And with the system's libcurl.
        let real = try await WorkerBinary.run(
            ["sync", manifest, "--cache-dir", directory.path + "/cache-real"],
            environment: ["TOKEN": "a\r\nInjected: 1"])
        #expect(real.code == 2 && !real.signalled, "\(real.stderr)")
    }

    @Test func controlBytesInHeaderValuesAreManifestErrors() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        harness.serve("a")
        let literal = harness.manifest([("/f/a", nil)], name: "literal.yaml", extra: "headers:\n  X-Token: \"a\\r\\nInjected: 1\"\n")
        let result = try await WorkerBinary.run(["sync", literal, "--cache-dir", harness.cache])
        #expect(result.code == 2, "\(result.stderr)")
        #expect(result.stderr.contains("literal.yaml:4:12"), "\(result.stderr)")
        #expect(result.stderr.contains("control character"))

        let expanded = harness.manifest([("/f/a", nil)], name: "env.yaml", extra: "headers:\n  X-Token: \"${TOKEN}\"\n")
        let fromEnvironment = try await WorkerBinary.run(
            ["sync", expanded, "--cache-dir", harness.cache],
            environment: ["TOKEN": "a\r\nInjected: 1"])
        #expect(fromEnvironment.code == 2, "\(fromEnvironment.stderr)")
        #expect(fromEnvironment.stderr.contains("env.yaml:4:12"))
        #expect(!fromEnvironment.stderr.contains("Injected"), "the value is never echoed")
        #expect(harness.origin.totalRequests == 0, "refused before any request")
        #expect(!FileManager.default.fileExists(atPath: harness.cache), "nothing was touched")
    }

    @Test func deepNestingAndHugeValuesAreRefusedAtOnce() async throws {
        let directory = TemporaryDirectory()
        let depth = 50_000
        let nested = directory.write(
            "deep.yaml",
            "version: 1\nentries: " + String(repeating: "[", count: depth)
                + String(repeating: "]", count: depth) + "\n")
        let deep = try await WorkerBinary.run(["plan", nested, "--cache-dir", directory.path + "/cache"])
        #expect(deep.code == 2)
        #expect(deep.stderr.contains("deep.yaml:2:"), "\(deep.stderr)")
        #expect(deep.stderr.contains("nesting deeper than 64 levels"))
        // Not a speed goal: a refusal that walked the whole document took 10 s of CPU here. The
        // run's CPU time, not its wall time: other tests' runs share the cores.
        let cpu = try await WorkerBinary.cpuSeconds(["plan", nested, "--cache-dir", directory.path + "/cache"])
        #expect(cpu < 2, "refused after \(cpu) s of CPU")

        let blockDeep = directory.write("block.yaml", "version: 1\nentries:\n" + String(repeating: "- ", count: 2000) + "x\n")
        let block = try await WorkerBinary.run(["plan", blockDeep])
        #expect(block.code == 2 && block.stderr.contains("nesting deeper than 64 levels"), "\(block.stderr)")

        let long = directory.write(
            "long.yaml", "version: 1\nentries:\n  - url: https://example.com/" + String(repeating: "a", count: 100_000) + "\n")
        let huge = try await WorkerBinary.run(["plan", long])
        #expect(huge.code == 2)
        #expect(huge.stderr.contains("long.yaml:3:") && huge.stderr.contains("the longest a manifest allows is 65536"), "\(huge.stderr)")

        // Past the read cap libyaml is stopped before it holds the whole value.
        let endless = directory.path + "/endless.yaml"
        _ = FileManager.default.createFile(atPath: endless, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: endless))
        handle.write(Data("version: 1\nentries:\n  - url: https://example.com/".utf8))
        let chunk = Data(repeating: UInt8(ascii: "a"), count: 1 << 20)
        for _ in 0..<40 { handle.write(chunk) }
        handle.write(Data("\n".utf8))
        try handle.close()
        let capped = try await WorkerBinary.run(["plan", endless])
        #expect(capped.code == 2)
        #expect(capped.stderr.contains("endless.yaml:3:") && capped.stderr.contains("MiB; refused"), "\(capped.stderr)")
    }

    @Test func cacheRootAndIndexPermissionsIgnoreTheUmask() async throws {
        let directory = TemporaryDirectory()
        let cache = directory.path + "/fresh/cache"
        let script = "umask 000; exec \"$0\" sync \"$1\" --cache-dir \"$2\""
        let result = try await WorkerBinary.run(
            ["-c", script, WorkerBinary.path, CommandLineTests.demoManifest, cache],
            executable: "/bin/sh")
        #expect(result.code == 0, "\(result.stderr)")
        func mode(_ path: String) -> mode_t? {
            var info = stat()
            return stat(path, &info) == 0 ? info.st_mode & 0o777 : nil
        }
        #expect(mode(cache) == 0o755)
        #expect(mode(cache + "/index.sqlite") == 0o600)
        for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: cache + "/index.sqlite" + suffix) {
            #expect(mode(cache + "/index.sqlite" + suffix) == 0o600, "\(suffix)")
        }
        // An index made 0644 by an earlier version is tightened by the next writer.
        chmod(cache + "/index.sqlite", 0o644)
        #expect(try await WorkerBinary.run(["sync", CommandLineTests.demoManifest, "--cache-dir", cache]).code == 0)
        #expect(mode(cache + "/index.sqlite") == 0o600)
    }
}

/// SHA-384 of some bytes, for SRI fixtures.
private enum SHA384Digest {
    static func of(_ bytes: [UInt8]) -> [UInt8] {
        Array(Crypto.SHA384.hash(data: bytes))
    }
}
