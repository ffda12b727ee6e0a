import Testing
import WorkerKinds

@testable import WorkerFetch
@testable import WorkerManifest

/// `--rewrite`'s rules as values: what a rule covers (its origin in every spelling, its path at a
/// segment boundary, an s3:// bucket whole) and what it sends there.
@Suite struct URLRewriteTests {
    init() { Kinds.install() }

    @Test func aRuleRewritesItsPrefixOnlyWithTheHostMatchedWhole() throws {
        let rewrite = try URLRewrite.parse([
            "https://cdn.example.com/assets/=http://127.0.0.1:8080/mirror/",
            "https://cdn.example.com/=http://127.0.0.1:8080/all/",
        ]).get()
        #expect(rewrite.apply("https://cdn.example.com/assets/a.png") == "http://127.0.0.1:8080/mirror/a.png")
        #expect(rewrite.apply("HTTPS://CDN.Example.com/assets/a.png") == "http://127.0.0.1:8080/mirror/a.png")
        #expect(rewrite.apply("https://cdn.example.com/other/b.png") == "http://127.0.0.1:8080/all/other/b.png")
        #expect(rewrite.apply("https://cdn.example.com.evil.test/assets/a.png") == "https://cdn.example.com.evil.test/assets/a.png")
        #expect(rewrite.apply("https://cdn.example.com:444/assets/a.png") == "https://cdn.example.com:444/assets/a.png")
        #expect(rewrite.apply("http://cdn.example.com/assets/a.png") == "http://cdn.example.com/assets/a.png")
        let bare = try URLRewrite.parse(["https://cdn.example.com=http://127.0.0.1:8080"]).get()
        #expect(bare.apply("https://cdn.example.com/x") == "http://127.0.0.1:8080/x")
        #expect(bare.apply("https://cdn.example.company/x") == "https://cdn.example.company/x")
        for bad in ["https://a", "=https://b", "ftp://a/=https://b/", "https://a/=file:///tmp/"] {
            guard case .failure = URLRewrite.parse([bad]) else { Issue.record("\(bad) parsed"); continue }
        }
    }

    @Test func aRewriteCoversEverySpellingOfItsOriginAndMatchesPathsAtABoundary() throws {
        let rewrite = try URLRewrite.parse(["http://localhost:21001/=http://mirror.test/m/", "https://cdn.test/a=https://m2.test/b"]).get()
        #expect(rewrite.apply("http://user@localhost:21001/f/a.png") == "http://mirror.test/m/f/a.png")
        #expect(rewrite.apply("http://localhost:021001/f/a.png") == "http://mirror.test/m/f/a.png")
        #expect(rewrite.apply("http://[::ffff:127.0.0.1]:21001/f/a.png") == "http://mirror.test/m/f/a.png")
        #expect(rewrite.apply("http://%6cocalhost:21001/f") == "http://mirror.test/m/f")
        #expect(rewrite.apply("http://localhost:21002/f") == "http://localhost:21002/f")
        #expect(rewrite.apply("https://cdn.test/a/x.png") == "https://m2.test/b/x.png")
        #expect(rewrite.apply("https://cdn.test/ab/x.png") == "https://cdn.test/ab/x.png", "a path prefix ends at a segment")
        #expect(rewrite.apply("https://cdn.test.evil.test/a/x.png") == "https://cdn.test.evil.test/a/x.png")
    }

    @Test func anS3FromSendsKeysToAnotherBucketOrAnHTTPURL() throws {
        let rewrite = try URLRewrite.parse(["s3://prod/avatars/=s3://backup/a/", "s3://prod/=https://proxy.test/prod/"]).get()
        #expect(rewrite.apply("s3://prod/avatars/two words.png") == "s3://backup/a/two words.png")
        #expect(rewrite.apply("S3://prod/other/x+y.png") == "https://proxy.test/prod/other/x%2By.png")
        #expect(rewrite.apply("s3://production/x.png") == "s3://production/x.png", "a bucket is matched whole")
        #expect(rewrite.apply("https://prod/x.png") == "https://prod/x.png")
        guard case .failure = URLRewrite.parse(["https://cdn.test/=s3://b/"]) else {
            Issue.record("an http(s) FROM with an s3:// TO parsed")
            return
        }
    }
}
