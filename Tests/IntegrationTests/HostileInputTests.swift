import Crypto
import Foundation
import Testing
import WorkerTestSupport

@testable import WorkerStore

/// Hostile files, index rows and flags, through the built binary: none may crash a command, hang
/// it, or copy what it must not.
@Suite(.hangLimit) struct HostileInputTests {
    /// A folder with a manifest of one local, hashless file, synced into a cache.
    private func objectFiles(_ directory: TemporaryDirectory) -> [String] {
        directory.files(under: "cache/objects/sha256").map { directory.path + "/cache/objects/sha256/" + $0 }
    }

    @Test func repairReadsLocalFilesOnlyInsideTheManifestFolder() async throws {
        let directory = TemporaryDirectory()
        let (_, cache) = try await directory.syncedLocalCache()
        let secret = directory.write("private/secret.txt", "the owner's secret\n")
        chmod(secret, 0o600)
        // The file becomes a symlink to a file outside the folder, and its object goes.
        unlink(directory.path + "/site/a.txt")
        #expect(symlink(secret, directory.path + "/site/a.txt") == 0)
        for object in objectFiles(directory) { unlink(object) }
        let repaired = try await WorkerBinary.run(["verify", "--repair", "--cache-dir", cache])
        #expect(repaired.code == 0, "\(repaired.stdout)\(repaired.stderr)")
        for object in objectFiles(directory) {
            #expect(try String(contentsOfFile: object, encoding: .utf8) != "the owner's secret\n", "an outside file was copied in")
        }
        // A regular file in the folder is read again.
        unlink(directory.path + "/site/a.txt")
        directory.write("site/a.txt", "public\n")
        let (_, cache2) = (0, cache)
        #expect(try await WorkerBinary.run(["sync", directory.path + "/site/m.yaml", "--cache-dir", cache2]).code == 0)
        for object in objectFiles(directory) { unlink(object) }
        let again = try await WorkerBinary.run(["verify", "--repair", "--cache-dir", cache, directory.path + "/site/m.yaml"])
        #expect(again.code == 0, "\(again.stdout)")
        #expect(again.stdout.contains("downloaded 1 again"), "\(again.stdout)")
    }

    @Test func aFIFOInTheManifestFolderFailsAtOnce() async throws {
        let directory = TemporaryDirectory()
        directory.write("site/a.txt", "a\n")
        #expect(mkfifo(directory.path + "/site/pipe", 0o644) == 0)
        let manifest = directory.write("site/m.yaml", "version: 1\nentries:\n  - url: a.txt\n  - url: pipe\n")
        // A FIFO opened for reading would block until the entry timeout (60 s here): the run's own
        // clock says it failed at once.
        let result = try await WorkerBinary.runBounded(
            [
                "sync", manifest, "--cache-dir", directory.path + "/cache",
                "--entry-timeout", "60", "--report", directory.path + "/r.json",
            ], seconds: 120)
        #expect(result.code == 1, "\(result.code) \(result.stderr)")
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory.path + "/r.json"))) as? [String: Any])
        let seconds = try #require(report["duration_seconds"] as? Double)
        #expect(seconds < 20, "\(seconds) s")
        #expect(result.stderr.contains("not a regular file"), "\(result.stderr)")
    }

    @Test func manifestOutputReplacesOnlyAManifestItWrote() async throws {
        let directory = TemporaryDirectory()
        directory.write("site/a.txt", "a\n")
        // An image given by mistake: not UTF-8.
        let image: [UInt8] = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0xff, 0xfe, 0x00, 0x80]
        let output = directory.write("logo.png", image)
        let result = try await WorkerBinary.run([
            "manifest", directory.path + "/site", "--base-url", "https://cdn.example.com/",
            "-o", output,
        ])
        #expect(result.code == 2, "\(result.stderr)")
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: output))) == image)
        // One it wrote is replaced.
        let yaml = directory.path + "/m.yaml"
        for _ in 0..<2 {
            let written = try await WorkerBinary.run([
                "manifest", directory.path + "/site", "--base-url", "https://cdn.example.com/", "-o", yaml,
            ])
            #expect(written.code == 0, "\(written.stderr)")
        }
    }

    @Test func aTamperedSizeColumnTrapsNothingAndVerifyFindsIt() async throws {
        let directory = TemporaryDirectory()
        directory.write("site/a.txt", "a\n")
        directory.write("site/b.txt", "b\n")
        let manifest = directory.write("site/m.yaml", "version: 1\nentries:\n  - url: a.txt\n  - url: b.txt\n")
        let cache = directory.path + "/cache"
        try #require(try await WorkerBinary.run(["sync", manifest, "--cache-dir", cache]).code == 0)
        let database = try SQLiteDatabase(path: cache + "/index.sqlite", create: false)
        try database.execute("UPDATE entries SET size = 9223372036854775807")
        let status = try await WorkerBinary.run(["status", "--cache-dir", cache])
        #expect(status.code == 0, "\(status.code) \(status.stderr)")
        let gc = try await WorkerBinary.run(["gc", "--max-size", "1GB", "--cache-dir", cache])
        #expect(gc.code == 0, "\(gc.code) \(gc.stderr)")
        let verify = try await WorkerBinary.run(["verify", "--cache-dir", cache])
        #expect(verify.code == 1, "a wrong size is a real problem: \(verify.stdout)")
        #expect(verify.stdout.contains("wrong size"), "\(verify.stdout)")
        let repaired = try await WorkerBinary.run(["verify", "--repair", "--cache-dir", cache])
        #expect(repaired.code == 0, "\(repaired.stdout)")
        #expect(try await WorkerBinary.run(["verify", "--cache-dir", cache]).code == 0)
    }

    @Test(arguments: [
        ["--max-rps", "1e-17"], ["--max-rps", "nan"], ["--max-rps", "1e300"], ["--deadline", "1e300"],
        ["--wait-lock", "1e300"], ["--connect-timeout", "1e20"], ["--read-timeout", "9e18"], ["--entry-timeout", "1e30d"],
        ["--max-size", "1e30"], ["--limit-rate", "1e300"], ["--jobs", "99999999999999999999"],
    ])
    func absurdOptionValuesAreUsageErrors(_ option: [String]) async throws {
        let directory = TemporaryDirectory()
        directory.write("site/a.txt", "a\n")
        let manifest = directory.write("site/m.yaml", "version: 1\nentries:\n  - url: a.txt\n")
        let result = try await WorkerBinary.run(["sync", manifest, "--cache-dir", directory.path + "/cache"] + option)
        #expect(result.code == 2, "\(option): \(result.code) \(result.stderr)")
        #expect(result.stderr.contains(option[0]), "\(option): \(result.stderr)")
    }

    @Test func gcTakesNoAbsurdAge() async throws {
        let directory = TemporaryDirectory()
        let gc = try await WorkerBinary.run(["gc", "--max-age", "1e300d", "--cache-dir", directory.path])
        #expect(gc.code == 2, "\(gc.code) \(gc.stderr)")
    }

    @Test func getAndPinTakeOnlyURLsAManifestTakes() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        harness.serve("a.txt")
        harness.serve("b.txt")
        let cache = harness.cache
        // Foundation's URL parser takes a space (it encodes it); a manifest does not.
        for bad in [harness.origin.url("/f/a b.txt"), harness.origin.url("/f/a|b"), "http://127.0.0.1:1/\u{1b}[2J"] {
            let got = try await WorkerBinary.run(["get", bad, "--cache-dir", cache])
            #expect(got.code == 2, "\(bad): \(got.code) \(got.stderr)")
            #expect(!got.stderr.unicodeScalars.contains { $0.value == 0x1b })
            let list = harness.directory.write("bad.txt", bad + "\n")
            let pinned = try await WorkerBinary.run(["manifest", "--urls", list, "--cache-dir", cache])
            #expect(pinned.code == 2, "\(bad): \(pinned.code) \(pinned.stderr)")
        }
        // A list saved with CR LF line ends is two URLs, and what it writes syncs.
        let list = harness.directory.write("urls.txt", harness.origin.url("/f/a.txt") + "\r\n" + harness.origin.url("/f/b.txt") + "\r\n")
        let output = harness.directory.path + "/pinned.yaml"
        let pinned = try await WorkerBinary.run(["manifest", "--urls", list, "--cache-dir", cache, "-o", output])
        #expect(pinned.code == 0, "\(pinned.stderr)")
        let yaml = try String(contentsOfFile: output, encoding: .utf8)
        #expect(yaml.components(separatedBy: "- url:").count == 3, "\(yaml)")
        #expect(try await WorkerBinary.run(["sync", output, "--cache-dir", cache]).code == 0)
    }
}

/// A libcurl that cannot be loaded is an error naming the package, never a trap.
@Suite(.hangLimit) struct MissingLibcurlTests {
    @Test func aSyncWithoutAUsableLibcurlExits4NamingThePackage() async throws {
        let directory = TemporaryDirectory()
        // A libcurl.so.4 found first (LD_LIBRARY_PATH) that has none of libcurl's functions.
        try await directory.buildStubLibcurl(source: "int worker_not_libcurl(void) { return 0; }\n")
        directory.write("site/a.txt", "a\n")
        let manifest = directory.write("m.yaml", "version: 1\nentries:\n  - url: http://127.0.0.1:9/a\n")
        let result = try await syncWithStub(manifest, cache: directory.path + "/cache", in: directory)
        // (A trap's SIGILL also reads as 4 in terminationStatus: the message tells them apart.)
        #expect(result.code == 4, "\(result.code) \(result.stderr)")
        #expect(result.stderr.contains("cannot download: libcurl.so.4 could not be loaded"), "\(result.stderr)")
        #expect(result.stderr.contains("apt-get install libcurl4"))
        #expect(!result.stderr.contains("Fatal error"), "\(result.stderr)")

        // A run that downloads nothing over the network never needs libcurl: local files sync,
        // into a new cache too (where the load is tried ahead, and its failure is not the run's).
        let local = directory.write("site/m.yaml", "version: 1\nentries:\n  - url: a.txt\n")
        let files = try await syncWithStub(local, cache: directory.path + "/local-cache", in: directory)
        #expect(files.code == 0, "\(files.code) \(files.stderr)")
        #expect(files.stdout.contains("added 1"), "\(files.stdout)")
    }

    /// `verify --repair` and `push`, which start engines of their own, end as a sync does: exit 4
    /// naming the package, and the cache as it was (the row whose object is gone is kept for a
    /// repair that can download).
    @Test func aRepairAndAPushWithoutAUsableLibcurlExit4NamingThePackage() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let gone = harness.serve("gone")
        _ = try await harness.sync(harness.manifest([("/f/gone", gone), ("/f/stays", harness.serve("stays"))]))
        unlink(harness.objectPath(sha256(gone)))
        try await harness.directory.buildStubLibcurl(source: "int worker_not_libcurl(void) { return 0; }\n")
        let stub = ["LD_LIBRARY_PATH": harness.directory.path + "/lib"]
        for arguments in [
            ["verify", "--repair", "--cache-dir", harness.cache],
            ["push", "--remote-cache", harness.origin.url("/tier/"), "--cache-dir", harness.cache],
        ] {
            let result = try await WorkerBinary.run(arguments, environment: stub)
            #expect(result.code == 4, "\(arguments[0]): \(result.code) \(result.stderr)")
            #expect(result.stderr.contains("cannot download: libcurl.so.4 could not be loaded"), "\(arguments[0]): \(result.stderr)")
            #expect(!result.stderr.contains("Fatal error"), "\(result.stderr)")
        }
        #expect(try harness.records().count == 2, "no row dropped by a repair that could not download")
    }

    /// `worker sync manifest` with the stub found first.
    private func syncWithStub(_ manifest: String, cache: String, in directory: TemporaryDirectory) async throws -> WorkerBinary.Result {
        try await WorkerBinary.run(["sync", manifest, "--cache-dir", cache], environment: ["LD_LIBRARY_PATH": directory.path + "/lib"])
    }

    /// A libcurl older than 7.80.0 (the newest option worker sets) is refused at load, by name.
    @Test func aLibcurlOlderThan780IsRefusedByVersion() async throws {
        let directory = TemporaryDirectory()
        // A libcurl.so.4 that says it is 7.74.0 (Debian 11's) and has nothing else.
        try await directory.buildStubLibcurl(
            source: """
                #include <stddef.h>
                struct info { int age; const char *version; unsigned int version_num; };
                static struct info old = { 9, "7.74.0", 0x074a00 };
                void *curl_version_info(int age) { (void)age; return &old; }
                """)
        let manifest = directory.write("m.yaml", "version: 1\nentries:\n  - url: http://127.0.0.1:9/a\n")
        let result = try await syncWithStub(manifest, cache: directory.path + "/cache", in: directory)
        #expect(result.code == 4, "\(result.code) \(result.stderr)")
        #expect(result.stderr.contains("libcurl 7.74.0 is older than 7.80.0, which worker needs"), "\(result.stderr)")
        #expect(result.stderr.contains("apt-get install libcurl4"))
    }
}
