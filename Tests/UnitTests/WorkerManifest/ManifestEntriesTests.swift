import Testing
import WorkerKinds
import WorkerTestSupport

@testable import WorkerManifest

@Suite(.hangLimit) struct ManifestEntriesTests {
    init() { Kinds.install() }

    static let sha256 = try! ContentHash.parse("sha256:" + String(repeating: "ab", count: 32)).get()
    static let sha512 = try! ContentHash.parse("sha512:" + String(repeating: "0f", count: 64)).get()
    static let md5 = try! ContentHash.parse("md5:098f6bcd4621d373cade4e832627b4f6").get()

    /// Every field of every entry comes back as it went in: each algorithm, none, a URL with
    /// non-ASCII bytes, an empty one, mirrors, positions beyond 16 bits.
    @Test func everyFieldComesBack() {
        let given = [
            ManifestEntry(url: "https://h/a.png", hash: Self.sha256, manifest: 0, line: 3, column: 10),
            ManifestEntry(url: "https://h/ü 😀.png", hash: nil, manifest: 1, line: 70_000, column: 5),
            ManifestEntry(
                url: "", hash: Self.sha512, manifest: 2, line: 1, column: 1,
                mirrors: ["https://m1/a", "s3://bucket/a"]),
            ManifestEntry(url: "file:///tmp/x", hash: Self.md5, manifest: 0, line: 9, column: 200_000),
        ]
        let entries = ManifestEntries(given)
        #expect(entries.count == 4)
        #expect(Array(entries) == given)
        for (position, entry) in given.enumerated() {
            #expect(entries.url(at: position) == entry.url)
            #expect(entries.hash(at: position) == entry.hash)
            #expect(entries.mirrors(at: position) == entry.mirrors)
            #expect(entries.withURL(at: position) { Array($0) } == Array(entry.url.utf8))
        }
    }

    /// A URL listed first without a hash, then with one, takes the hash (and the later listing's
    /// mirrors) in place; the entries around it are untouched.
    @Test func aHashGivenLaterIsTakenInPlace() {
        var entries: ManifestEntries = [
            ManifestEntry(url: "http://h/a", hash: nil, manifest: 0, line: 3, column: 10),
            ManifestEntry(url: "http://h/b", hash: Self.md5, manifest: 0, line: 5, column: 10),
        ]
        entries.setHash(Self.sha256, mirrors: ["http://m/a"], at: 0)
        #expect(
            entries[0]
                == ManifestEntry(
                    url: "http://h/a", hash: Self.sha256, manifest: 0, line: 3, column: 10,
                    mirrors: ["http://m/a"]))
        #expect(entries[1] == ManifestEntry(url: "http://h/b", hash: Self.md5, manifest: 0, line: 5, column: 10))
        entries.addMirrors(["http://m/a", "http://m2/a"], at: 0)
        #expect(entries.mirrors(at: 0) == ["http://m/a", "http://m2/a"], "a mirror listed twice is kept once")
        #expect(entries.mirrors(at: 1).isEmpty)
    }

    /// The loader keeps its entries this way: a manifest listing a URL twice (hash second) and
    /// another manifest's entries come back in order with their places.
    @Test func theLoaderFillsThem() throws {
        let directory = TemporaryDirectory()
        let first = directory.write(
            "a.yaml",
            """
            version: 1
            entries:
              - url: http://h/a
              - url: http://h/b
                hash: md5:098f6bcd4621d373cade4e832627b4f6
              - url: http://h/a
                hash: sha256:\(String(repeating: "ab", count: 32))
            """)
        let second = directory.write("b.yaml", "version: 1\nentries:\n  - url: http://h/c\n")
        let set = try ManifestLoader(environment: [:]).load(paths: [first, second])
        #expect(
            Array(set.entries) == [
                ManifestEntry(url: "http://h/a", hash: Self.sha256, manifest: 0, line: 3, column: 10),
                ManifestEntry(url: "http://h/b", hash: Self.md5, manifest: 0, line: 4, column: 10),
                ManifestEntry(url: "http://h/c", hash: nil, manifest: 1, line: 3, column: 10),
            ])
    }
}
