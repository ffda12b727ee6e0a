import Testing
import WorkerKinds

@testable import WorkerManifest

/// Tree paths: what an entry's `path` may be, and the path its URL gives without one.
@Suite struct TreePathTests {
    init() { Kinds.install() }

    @Test(arguments: [
        ("https://cdn.example.com/u/42.png", "u/42.png"),
        ("https://user:pw@cdn.example.com:8443/u/42.png?v=2#top", "u/42.png"),
        ("https://cdn.example.com/a%20b/%C3%A9t%C3%A9.png", "a b/été.png"),
        ("u/123/avatar.png", "u/123/avatar.png"),
        ("/rooted/x.png", "rooted/x.png"),
        ("s3://bucket/key/x.png", "key/x.png"),
    ])
    func aURLGivesItsPathDecoded(url: String, path: String) throws {
        #expect(try TreePath.derived(fromURL: url).get() == path)
    }

    @Test(arguments: [
        "https://cdn.example.com/", "https://cdn.example.com", "https://h/dir/", "https://h/a%2", "https://h/a%ff",
        "https://h/a/%2e%2e/b", "https://h/a%00b", "?only=query",
    ])
    func aURLWithoutAUsablePathGivesNone(url: String) {
        #expect((try? TreePath.derived(fromURL: url).get()) == nil)
    }

    @Test func pathsThatCannotBeInATreeAreNamed() {
        #expect(TreePath.problem("a/b.png") == nil)
        #expect(TreePath.problem("a/b\u{FFFE}.png")?.contains("noncharacter") == true, "a bucket key no manifest can hold")
        #expect(TreePath.problem("c\u{FFFF}")?.contains("noncharacter") == true)
        #expect(TreePath.problem("d\u{FFFD}.png") == nil, "the replacement character is a character")
        #expect(TreePath.problem("..a/b..") == nil, "dots inside a name are fine")
        #expect(TreePath.problem("")?.contains("empty") == true)
        #expect(TreePath.problem("/etc/passwd")?.contains("absolute") == true)
        #expect(TreePath.problem("a/../b")?.contains("'..'") == true)
        #expect(TreePath.problem("./a")?.contains("'.'") == true)
        #expect(TreePath.problem("a//b")?.contains("empty component") == true)
        #expect(TreePath.problem("a/")?.contains("empty component") == true)
        #expect(TreePath.problem("a\u{7f}b")?.contains("control character") == true)
        #expect(TreePath.problem("a\nb")?.contains("control character") == true)
        #expect(TreePath.problem(String(repeating: "x", count: 255)) == nil)
        #expect(TreePath.problem(String(repeating: "x", count: 256))?.contains("256 bytes") == true)
        #expect(
            TreePath.problem(Array(repeating: String(repeating: "x", count: 200), count: 6).joined(separator: "/"))?
                .contains("at most 1024") == true)
    }
}
