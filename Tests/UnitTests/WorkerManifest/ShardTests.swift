import Testing
import WorkerTestSupport

@testable import WorkerManifest

@Suite(.hangLimit) struct ShardTests {
    @Test(arguments: [1, 2, 4, 7])
    func shardsAreDisjointAndCoverEveryURL(count: Int) {
        let urls = (0..<10_000).map { "https://cdn.example.com/u/\($0)/avatar.png" }
        var owners = [Int](repeating: 0, count: urls.count)
        var sizes = [Int](repeating: 0, count: count)
        for index in 0..<count {
            let shard = Shard(index: index, count: count)
            for (position, url) in urls.enumerated() where shard.contains(url) {
                owners[position] += 1
                sizes[index] += 1
            }
        }
        #expect(owners.allSatisfy { $0 == 1 }, "every URL in exactly one shard")
        // A stable hash spreads them evenly (within 15 % of the mean here).
        let mean = Double(urls.count) / Double(count)
        #expect(sizes.allSatisfy { abs(Double($0) - mean) < mean * 0.15 })
    }

    @Test func shardOfAURLIsStable() {
        // Pinned values, computed outside the code (first 8 bytes of SHA-256 of the URL, big-endian,
        // mod N, with Python's hashlib): the assignment must not change between versions or machines,
        // or pods of one Indexed Job running different versions would skip or repeat entries.
        #expect(Shard.number(of: "https://cdn.example.com/u/1.png", count: 4) == 3)
        #expect(Shard.number(of: "https://cdn.example.com/u/2.png", count: 4) == 1)
        #expect(Shard.number(of: "x", count: 4) == 0)
        #expect(Shard.number(of: "https://cdn.example.com/u/1.png", count: 7) == 1)
        #expect(Shard.number(of: "https://cdn.example.com/u/2.png", count: 7) == 2)
        #expect(Shard("2/4") == Shard(index: 2, count: 4))
        #expect(Shard("4/4") == nil)
        #expect(Shard("-1/4") == nil)
        #expect(Shard("1") == nil)
    }

    @Test func fingerprintIgnoresFormattingButNotContent() throws {
        let directory = TemporaryDirectory()
        let a = directory.write(
            "a.yaml",
            """
            version: 1
            name: avatars
            headers:
              Authorization: "Bearer ${NOT_SET_ANYWHERE}"
            entries:
              - url: https://h/1.png
                hash: sha256:9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08
              - url: https://h/2.png
            """)
        let b = directory.write(
            "b.yaml",
            """
            # the same, reordered and reformatted
            entries:
            - {hash: 'sha256-n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg=', url: "https://h/1.png"}
            -   url: https://h/2.png
            headers: {Authorization: "other ${VALUE}"}
            name: avatars
            version: 1
            """)
        let c = directory.write(
            "c.yaml",
            """
            version: 1
            name: avatars
            headers:
              Authorization: x
            entries:
              - url: https://h/1.png
                hash: sha256:0000000000000000000000000000000000000000000000000000000000000000
              - url: https://h/2.png
            """)
        var loader = ManifestLoader(environment: [:])
        loader.expandsHeaders = false
        let fa = ManifestFingerprint.digest(try loader.load(paths: [a]))
        #expect(fa == ManifestFingerprint.digest(try loader.load(paths: [b])))
        #expect(fa != ManifestFingerprint.digest(try loader.load(paths: [c])))
        #expect(fa.count == 64)
    }
}
