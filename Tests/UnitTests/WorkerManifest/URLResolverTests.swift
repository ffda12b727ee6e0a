import Foundation
import Testing
import WorkerTestSupport

@testable import WorkerManifest

@Suite(.hangLimit) struct URLCheckTests {
    @Test(arguments: ["http://h", "https://cdn.example.com/u/1.png?x=1&y=%20#f", "http://user:pw@h:8080/p", "http://[::1]:80/x"])
    func wellFormed(url: String) {
        #expect(URLResolver.isWellFormedAbsolute(url))
    }

    @Test(arguments: [
        "http:/h", "http://", "http:///path", "http://:80/x", "http://h/a b", "http://h/é", "http://h/%zz",
        "http://h/%2", "http://h/<x>", "http://h\\x", "http://h/\u{7F}",
    ])
    func malformed(url: String) {
        #expect(!URLResolver.isWellFormedAbsolute(url))
    }
}

/// Relative entries resolve by appending to `base_url` when that is plain RFC 3986 resolution, and
/// through Foundation otherwise; both must give the same URL (index keys must not depend on the path).
@Suite(.hangLimit) struct RelativeResolutionTests {
    static let bases = ["http://h", "http://h/dir", "https://cdn.example.com/assets/v2/", "http://user@h:8080/x/y/"]
    static let references = [
        "a.png", "u/000001/avatar.png", "/abs/x.png", "a/b?x=1&y=2", "a/b#frag", "?q=1", "#f", "a/", "a//b",
        "x/a:b", "%41b.png", "a%2Fb", "a/b.c.d", "-_~!$&'()*+,;=@.png", "a/..b/c..", "...",
        // These take Foundation's path; listed to compare both anyway.
        "a/./b", "../x", "./x", ".", "..", "a/..", "a/.?x", "//other/x", "a b", "é.png", "%zz", "a:b", "[x]",
    ]

    @Test(arguments: bases)
    func appendingMatchesFoundation(base: String) throws {
        var resolver = URLResolver(manifestPath: "/tmp/m.yaml")
        #expect(resolver.setBase(base) == nil)
        let baseURL = try #require(URL(string: base.hasSuffix("/") ? base : base + "/"))
        var appended = 0
        for reference in Self.references {
            let foundation = URL(string: reference, relativeTo: baseURL)?.absoluteString
            let resolved = try? resolver.resolve(reference).get()
            if let fast = resolver.appendingResolution(reference) {
                appended += 1
                #expect(fast == foundation, "\(reference) against \(base)")
                #expect(resolved == fast)
                // Taken without a second check of the whole URL: it must pass that check.
                #expect(URLResolver.isWellFormedAbsolute(fast), "\(fast)")
            }
        }
        #expect(appended == 16, "the plain references take the appending path")
        #expect(resolver.appendingResolution("a/./b") == nil && resolver.appendingResolution("../x") == nil)
        #expect(resolver.appendingResolution("//other/x") == nil && resolver.appendingResolution("a:b") == nil)
        #expect(
            resolver.appendingResolution("a b") == nil && resolver.appendingResolution("é.png") == nil,
            "what Foundation would encode takes Foundation's path")
    }

    /// A `base_url` Foundation takes but the entry check does not (a `%` without two hex digits, a
    /// brace): every entry under it is refused, as when each resolved URL was checked whole.
    @Test(arguments: ["http://h/a%zz/", "http://h/{x}/", "http://h/a|b/"])
    func entriesUnderABaseTheCheckRefusesAreRefused(base: String) {
        var resolver = URLResolver(manifestPath: "/tmp/m.yaml")
        #expect(resolver.setBase(base) == nil)
        #expect(!URLResolver.isWellFormedAbsolute(base + "a.png"))
        #expect((try? resolver.resolve("a.png").get()) == nil)
    }

    @Test func baseWithQueryAlwaysUsesFoundation() {
        var resolver = URLResolver(manifestPath: "/tmp/m.yaml")
        #expect(resolver.setBase("http://h/dir/?token=1") == nil)
        #expect(resolver.appendingResolution("a.png") == nil)
        #expect((try? resolver.resolve("a.png").get()) == "http://h/dir/a.png")
    }
}
