import Testing
import WorkerKinds
import WorkerManifest

@testable import WorkerFetch

/// Dot segments removed as RFC 3986 §5.2.4 removes them (its §5.4 examples, as absolute URLs),
/// and the rules of `--rewrite` compare the path a server is asked for.
@Suite struct DotSegmentsTests {
    init() { Kinds.install() }

    @Test(arguments: [
        ("http://a/b/c/./../../g", "http://a/g"), ("http://a/b/c/../../../g", "http://a/g"), ("http://a/b/c/g/.", "http://a/b/c/g/"),
        ("http://a/b/c/g/..", "http://a/b/c/"), ("http://a/b/c/./g;x=1/../y", "http://a/b/c/y"),
        (
            "http://a/b/c/g/./h?x=/../y#s/../z",
            "http://a/b/c/g/h?x=/../y#s/../z"
        ), ("http://a/b//../c", "http://a/b/c"), ("http://a/.x/..y/g", "http://a/.x/..y/g"),
        ("http://a", "http://a"), ("http://a?q=/../", "http://a?q=/../"), ("http://a/b/c", "http://a/b/c"),
    ])
    func dotSegmentsAreRemovedAsRFC3986Does(_ url: String, _ expected: String) {
        #expect(DotSegments.removing(in: url) == expected)
    }

    @Test func anEncodedDotSegmentIsToldApart() {
        #expect(DotSegments.hasEncoded(in: "http://a/cdn/%2e%2E/admin"))
        #expect(DotSegments.hasEncoded(in: "http://a/cdn/.%2e/admin"))
        #expect(DotSegments.hasEncoded(in: "http://a/cdn/%2E"))
        #expect(!DotSegments.hasEncoded(in: "http://a/cdn/%2e%2ex/admin"))
        #expect(!DotSegments.hasEncoded(in: "http://a/cdn/f?x=%2e%2e"))
    }

    @Test func aRuleCoversThePathAServerIsAskedFor() throws {
        var rewrite = try URLRewrite.parse(["http://from.test/cdn/=http://to.test/cdn/"]).get()
        rewrite.strict = true
        #expect(rewrite.rule(for: "http://from.test/cdn/a/../b") == 0)
        #expect(rewrite.rule(for: "http://from.test/cdn/../admin/x") == nil)
        #expect(rewrite.apply("http://from.test/cdn/a/../b") == "http://to.test/cdn/b")
        #expect(!rewrite.mayRequest("http://to.test/cdn/../admin/x"))
        #expect(rewrite.mayRequest("http://to.test/cdn/./x"))
        // An S3 key is literal: `..` in it is a name, not a step up.
        let buckets = try URLRewrite.parse(["s3://bucket/pub/=s3://other/pub/"]).get()
        #expect(buckets.apply("s3://bucket/pub/../secret") == "s3://other/pub/../secret")
    }
}
