import Foundation
import Testing
import WorkerTestSupport
@testable import WorkerManifest
@testable import WorkerSupport

@Suite(.hangLimit) struct UnitsTests {
    @Test func durations() {
        #expect(Units.duration("30") == 30)
        #expect(Units.duration("1.5s") == 1.5)
        #expect(Units.duration("5m") == 300)
        #expect(Units.duration("2h") == 7200)
        #expect(Units.duration("7d") == 604_800)
        #expect(Units.duration("250ms") == 0.25)
        #expect(Units.duration("5 parsecs") == nil)
        #expect(Units.duration("-1") == nil)
        #expect(Units.duration("") == nil)
    }

    @Test func sizes() {
        #expect(Units.size("1048576") == 1_048_576)
        #expect(Units.size("256MiB") == 256 << 20)
        #expect(Units.size("1MB") == 1_000_000)
        #expect(Units.size("2GB") == 2_000_000_000)
        #expect(Units.size("1.5KiB") == 1536)
        #expect(Units.size("10M") == 10 << 20)
        #expect(Units.size("ten") == nil)
        #expect(Units.size("1XB") == nil)
    }

    @Test func redactsUserInfoOnly() {
        #expect(Redact.url("https://user:pw@cdn.example.com/a@b.png") == "https://cdn.example.com/a@b.png")
        #expect(Redact.url("https://cdn.example.com/a@b.png") == "https://cdn.example.com/a@b.png")
        #expect(Redact.url("http://token@h:8080/x?y=@") == "http://h:8080/x?y=@")
        // The last @ of the authority ends the user info; the rest is kept byte for byte.
        #expect(Redact.url("https://a@b:pw@host/x") == "https://host/x")
        #expect(Redact.url("https://usér:pässword@hôst/ünïcode?q=1#f") == "https://hôst/ünïcode?q=1#f")
        #expect(Redact.url("https://user:pw@host") == "https://host")
        // No `://`, or nothing after it: not a URL with an authority; as it is.
        #expect(Redact.url("user@host:path") == "user@host:path")
        #expect(Redact.url("s3:/a@b") == "s3:/a@b")
        #expect(Redact.url("x://") == "x://")
    }
}

@Suite(.hangLimit) struct URLCheckTests {
    @Test(arguments: ["http://h", "https://cdn.example.com/u/1.png?x=1&y=%20#f", "http://user:pw@h:8080/p", "http://[::1]:80/x"])
    func wellFormed(url: String) {
        #expect(URLResolver.isWellFormedAbsolute(url))
    }

    @Test(arguments: ["http:/h", "http://", "http:///path", "http://:80/x", "http://h/a b", "http://h/é", "http://h/%zz",
                      "http://h/%2", "http://h/<x>", "http://h\\x", "http://h/\u{7F}"])
    func malformed(url: String) {
        #expect(!URLResolver.isWellFormedAbsolute(url))
    }
}

/// A scheme is read up to its colon; a byte no scheme holds before it (a relative path's `/`)
/// means there is none.
@Suite(.hangLimit) struct SchemeTests {
    @Test func schemesAreReadUpToTheirColonAndLowercased() {
        #expect(URLKinds.scheme(of: "HTTP://h/x") == "http")
        #expect(URLKinds.scheme(of: "s3://bucket/key") == "s3")
        #expect(URLKinds.scheme(of: "a+b.c-9:rest") == "a+b.c-9")
        #expect(URLKinds.scheme(of: "ftp:") == "ftp")
    }

    @Test(arguments: ["", ":x", "1a:b", "scale/0000/a:b.png", "a b:c", "abc", "é:x", "/x:y", "a_b:c"])
    func noScheme(text: String) {
        #expect(URLKinds.scheme(of: text) == nil)
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
        #expect(resolver.appendingResolution("a b") == nil && resolver.appendingResolution("é.png") == nil,
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
