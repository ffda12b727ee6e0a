import Crypto
import CurlTransport
import Foundation
import Testing
import WorkerFetch
import WorkerManifest
import WorkerReport
import WorkerStore
import WorkerTestSupport

@testable import WorkerSync

/// An origin, a temporary folder for manifests, and a cache directory: one per test.
struct Harness {
    let origin: TestOrigin
    let directory = TemporaryDirectory()
    var cache: String { directory.path + "/cache" }

    static func start() async throws -> Harness {
        Harness(origin: try await TestOrigin.start())
    }

    /// Serves deterministic content at `/f/<name>` and returns it.
    @discardableResult
    func serve(_ name: String, _ text: String? = nil) -> [UInt8] {
        let bytes = Array((text ?? "content of \(name)\n").utf8)
        origin.set("/f/" + name, bytes)
        return bytes
    }

    /// Writes a manifest of `(path on the origin, expected bytes or nil for no hash)`.
    @discardableResult
    func manifest(_ entries: [(path: String, bytes: [UInt8]?)], name: String = "m.yaml", extra: String = "") -> String {
        var text = "version: 1\nname: test\n\(extra)entries:\n"
        for entry in entries {
            text += "  - url: \(origin.url(entry.path))\n"
            if let bytes = entry.bytes { text += "    hash: sha256:\(sha256(bytes))\n" }
        }
        return directory.write(name, text)
    }

    /// Syncs in process; `environment` is what `${VAR}` in headers reads (injected, never set
    /// on the process, whose environment every test running in parallel shares).
    func sync(
        _ paths: String..., environment: [String: String] = [:],
        configure: (inout SyncOptions) -> Void = { _ in }
    ) async throws -> SyncReport {
        var options = SyncOptions(cacheDirectory: cache)
        options.fetch.transport = CurlTransport()
        options.fetch.retry = RetryPolicy(retries: 2, baseDelay: 0.01, maxDelay: 0.05)
        configure(&options)
        let set = try ManifestLoader(environment: environment).load(paths: paths)
        return try await SyncEngine(options: options).syncLoaded(set).report
    }

    func records() throws -> [IndexRecord] {
        try CacheIndex(path: cache + "/index.sqlite", create: false).allRecords().sorted { $0.url < $1.url }
    }

    /// The bytes of the object the index holds for `path` on the origin.
    func cachedBytes(_ path: String) throws -> [UInt8]? {
        guard let record = try records().first(where: { $0.url == origin.url(path) }) else { return nil }
        return Array(try Data(contentsOf: URL(fileURLWithPath: objectPath(record.object))))
    }

    func objectPath(_ sha256: String) -> String {
        cache + "/objects/sha256/" + sha256.prefix(2) + "/" + sha256
    }

    /// Every object file, by name.
    func objects() -> [String] {
        directory.files(under: "cache/objects/sha256").map { String($0.split(separator: "/").last!) }
    }

    func temporaryFiles() -> [String] { directory.files(under: "cache/tmp") }
}

func sha256(_ bytes: [UInt8]) -> String {
    SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
}

func sha256(_ text: String) -> String { sha256(Array(text.utf8)) }

extension TemporaryDirectory {
    /// A manifest of one local file (`site/a.txt`) synced once into `cache/` through the binary.
    func syncedLocalCache() async throws -> (manifest: String, cache: String) {
        write("site/a.txt", "public\n")
        let manifest = write("site/m.yaml", "version: 1\nentries:\n  - url: a.txt\n")
        let cache = path + "/cache"
        let result = try await WorkerBinary.run(["sync", manifest, "--cache-dir", cache])
        guard result.code == 0 else { throw SyncFailed(stderr: result.stderr) }
        return (manifest, cache)
    }

    struct SyncFailed: Error { let stderr: String }

    /// Compiles `source` into `lib/libcurl.so.4` here (found first with LD_LIBRARY_PATH).
    func buildStubLibcurl(source: String) async throws {
        let file = write("stub.c", source)
        try FileManager.default.createDirectory(atPath: path + "/lib", withIntermediateDirectories: true)
        let compiler = ["/usr/bin/clang", "/opt/swift/usr/bin/clang", "/usr/bin/cc"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
        let cc = try #require(compiler, "a C compiler (the Swift toolchain has clang)")
        let built = try await WorkerBinary.run(["-shared", "-fPIC", "-o", path + "/lib/libcurl.so.4", file], executable: cc)
        try #require(built.code == 0, "\(built.stderr)")
    }
}
