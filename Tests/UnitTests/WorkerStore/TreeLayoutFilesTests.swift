import Testing

@testable import WorkerManifest
@testable import WorkerStore

/// The files a published folder holds in each layout, from the manifests and the objects their
/// entries hold, without a file system.
@Suite struct TreeLayoutFilesTests {
    private static let one = String(repeating: "a", count: 64), two = String(repeating: "b", count: 64)
    private static let set = ManifestSet(
        manifests: [],
        entries: [
            ManifestEntry(url: "https://h/x/a.png", manifest: 0, line: 1, column: 1),
            ManifestEntry(url: "https://h/x/copy.png", manifest: 0, line: 2, column: 1),
            ManifestEntry(url: "https://h/x/b", manifest: 0, line: 3, column: 1),
            ManifestEntry(url: "https://h/x/never.png", manifest: 0, line: 4, column: 1),
        ],
        tree: [
            TreeEntry(path: "a.png", entry: 0, manifest: 0, line: 1, column: 1),
            TreeEntry(path: "again/a.png", entry: 0, manifest: 0, line: 1, column: 1),
            TreeEntry(path: "never.png", entry: 3, manifest: 0, line: 4, column: 1),
        ])
    /// Entries 0 and 1 hold one content, entry 2 another, entry 3 nothing.
    private static func object(_ entry: Int) -> String? { [one, one, two, nil][entry] }

    @Test func theTreeLayoutHasEachPlaceAndCountsWhatIsNotCached() {
        let files = TreeLayout.tree.files(of: Self.set, objectsDirectory: "/c/objects", object: Self.object)
        #expect(files.map(\.path) == ["a.png", "again/a.png", "never.png"])
        #expect(files.map(\.object) == [Self.one, Self.one, nil])
        #expect(TreeLayout.tree.entries(of: Self.set) == [0, 0, 3])
    }

    @Test func aLayoutNamedByContentHoldsEachContentOnce() {
        let files = TreeLayout.hash.files(of: Self.set, objectsDirectory: "/c/objects", object: Self.object)
        #expect(files.compactMap { $0.object == nil ? nil : $0.path } == [Self.one + ".png", Self.two])
        #expect(files.filter { $0.object == nil }.count == 1, "the entry never fetched is missing")
        #expect(TreeLayout.hash.entries(of: Self.set) == [0, 1, 2, 3])
    }

    @Test func aLayoutNamedByURLHoldsEachURL() {
        let files = TreeLayout.kingfisher.files(of: Self.set, objectsDirectory: "/c/objects", object: Self.object)
        #expect(
            files.filter { $0.object != nil }.map(\.path)
                == ["https://h/x/a.png", "https://h/x/copy.png", "https://h/x/b"].map {
                    TreeLayout.kingfisher.fileName(url: $0, object: "")
                })
        #expect(TreeLayout.names == "tree, sdwebimage, kingfisher or hash")
    }
}
