import Foundation
import Testing
import WorkerTestSupport

@testable import WorkerManifest
@testable import WorkerSupport

/// A deterministic mutation fuzzer for the manifest reader: every mutated input must give
/// well-formed entries or located errors, never a crash. Iterations: `WORKER_MANIFEST_FUZZ_ITERATIONS`
/// (default 3000) and `WORKER_MANIFEST_FUZZ_SEED` (default: a fixed one) choose how many and
/// which; a failure names the seed.
@Suite(.hangLimit) struct ManifestMutationTests {
    static let seeds = [
        """
        version: 1
        name: avatars
        base_url: https://cdn.example.com/assets
        headers:
          Authorization: "Bearer ${WORKER_FUZZ_TOKEN}"
        entries:
          - url: u/1/avatar.png
            hash: sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
          - url: https://other.example.com/u/2.png
            hash: 5d41402abc4b2a76b9719d911017c592
          - url: /root/3.png
          - {url: "http://cdn.example.com/u/4.png", hash: 'sha256-n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg='}
        """,
        """
        # local files
        version: 1
        entries:
          - url: img/a.png
            hash: md5:098f6bcd4621d373cade4e832627b4f6
          - url: "img/b c.png"
        """,
    ]

    static let tokens = [
        ":", "-", " ", "\n", "  ", "\t", "\"", "'", "[", "]", "{", "}", "#", "|", ">", "&a ", "*a", "!!str ", "? ",
        "---\n", "...\n", "\0", "\u{FEFF}", "\u{00E9}", "${", "}", "%", "../", "url: ", "hash: ", "sha256:", "-1",
        "version: 2\n", "entries: []\n", "~", "null", "\r\n", "\u{7F}", "\\", "@",
    ]

    static func mutate(_ input: [UInt8], using random: inout SplitMix64) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            let position = bytes.isEmpty ? 0 : Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<6, using: &random) {
            case 0 where !bytes.isEmpty:
                bytes[position] ^= UInt8(1 << Int.random(in: 0..<8, using: &random))
            case 1:
                bytes.insert(contentsOf: Array(tokens.randomElement(using: &random)!.utf8), at: position)
            case 2 where !bytes.isEmpty:
                bytes.removeSubrange(position..<min(bytes.count, position + Int.random(in: 1...12, using: &random)))
            case 3:
                let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
                let line = lines.randomElement(using: &random) ?? []
                bytes.insert(contentsOf: Array(line) + [UInt8(ascii: "\n")], at: position)
            case 4:
                bytes = Array(bytes.prefix(position))
            default:
                bytes.insert(UInt8.random(in: 0...255, using: &random), at: position)
            }
        }
        return bytes
    }

    @Test func mutatedManifestsGiveEntriesOrLocatedErrors() throws {
        let iterations = TestSeed.count("WORKER_MANIFEST_FUZZ_ITERATIONS", 3000)
        let seed = TestSeed.from("WORKER_MANIFEST_FUZZ_SEED", fixed: 0x5EED)
        let directory = TemporaryDirectory()
        let path = directory.path + "/fuzz.yaml"
        var random = SplitMix64(seed: seed)
        var accepted = 0
        var rejected = 0
        let started = Date()
        for iteration in 0..<iterations {
            let input = Self.mutate(Array(Self.seeds[iteration % Self.seeds.count].utf8), using: &random)
            try Data(input).write(to: URL(fileURLWithPath: path))
            do {
                let set = try ManifestLoader(environment: ["WORKER_FUZZ_TOKEN": "t"]).load(paths: [path])
                accepted += 1
                for entry in set.entries {
                    let scheme = URLKinds.scheme(of: entry.url)
                    #expect(
                        scheme == "http" || scheme == "https" || scheme == "file",
                        "seed \(seed) (WORKER_MANIFEST_FUZZ_SEED), iteration \(iteration): \(entry.url)")
                    if let hash = entry.hash {
                        #expect(
                            Hex.isLowercaseHex(hash.hex, length: hash.algorithm.byteCount * 2),
                            "seed \(seed) (WORKER_MANIFEST_FUZZ_SEED), iteration \(iteration)")
                    }
                    if scheme == "file" {
                        #expect(
                            entry.url.hasPrefix("file://" + directory.path + "/"),
                            "seed \(seed) (WORKER_MANIFEST_FUZZ_SEED), iteration \(iteration)")
                    }
                }
            } catch {
                rejected += 1
                #expect(!error.diagnostics.isEmpty, "seed \(seed) (WORKER_MANIFEST_FUZZ_SEED), iteration \(iteration)")
                for diagnostic in error.diagnostics {
                    #expect(diagnostic.path == path)
                    #expect(
                        diagnostic.line >= 1 && diagnostic.column >= 1,
                        "seed \(seed) (WORKER_MANIFEST_FUZZ_SEED), iteration \(iteration): \(diagnostic)")
                    #expect(!diagnostic.message.isEmpty)
                }
            }
        }
        print(
            "manifest mutation fuzz: \(iterations) inputs in \(String(format: "%.1f", Date().timeIntervalSince(started))) s, "
                + "\(accepted) accepted, \(rejected) rejected with located errors")
        #expect(accepted > 0 && rejected > 0, "the mutations reach both outcomes")
    }
}
