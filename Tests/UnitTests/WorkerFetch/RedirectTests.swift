import Testing
import WorkerKinds
import WorkerManifest
import WorkerTestSupport

@testable import WorkerFetch

@Suite(.hangLimit) struct RedirectTests {
    init() { Kinds.install() }

    func target(_ from: String, _ location: String?, hop: Int = 0, visited: Set<String> = []) -> Result<String, FetchFailure> {
        var seen = visited.union([from])
        return Fetcher.redirectTarget(from: from, location: location, status: 302, hop: hop, maxRedirects: 5, visited: &seen)
    }

    func failure(_ result: Result<String, FetchFailure>) -> FetchFailure? {
        if case .failure(let failure) = result { return failure }
        return nil
    }

    @Test func relativeAndAbsoluteLocations() throws {
        #expect(try target("https://a.example/x/y", "../z").get() == "https://a.example/z")
        #expect(try target("https://a.example/x", "https://b.example/q?1").get() == "https://b.example/q?1")
        #expect(try target("http://a.example/x", "https://a.example/x").get() == "https://a.example/x")
    }

    @Test func httpsToHTTPIsRefused() {
        #expect(
            failure(target("https://a.example/x", "http://a.example/x")) == FetchFailure(.redirect, "redirect from https to http refused"))
    }

    @Test func otherSchemesAreRefused() {
        #expect(
            failure(target("http://a.example/x", "file:///etc/passwd"))
                == FetchFailure(.scheme, "redirect to a 'file' URL refused (only http and https)"))
        #expect(
            failure(target("http://a.example/x", "ftp://a.example/x"))
                == FetchFailure(.scheme, "redirect to a 'ftp' URL refused (only http and https)"))
    }

    @Test func loopsLimitsAndMissingLocation() {
        #expect(
            failure(target("http://a.example/y", "/x", visited: ["http://a.example/x"]))
                == FetchFailure(.redirect, "redirect loop at http://a.example/x"))
        #expect(failure(target("http://a.example/x", "/y", hop: 5)) == FetchFailure(.redirect, "more than 5 redirects"))
        #expect(failure(target("http://a.example/x", nil)) == FetchFailure(.redirect, "HTTP 302 redirect without a Location"))
    }

    @Test func originComparesSchemeHostAndPort() {
        #expect(Origin.of("http://A.example/x") == Origin.of("http://a.example:80/y"))
        #expect(Origin.of("https://a.example/x") != Origin.of("http://a.example/x"))
        #expect(Origin.of("http://a.example:8080/") != Origin.of("http://a.example/"))
    }
}

/// The byte-level origin reader (plain `http(s)://host[:port]`) agrees with the general one: the
/// same URL with user info (which the byte-level one leaves to the general one) is the same
/// origin, named alike.
@Suite(.hangLimit) struct OriginKeyTests {
    init() { Kinds.install() }

    @Test(arguments: [
        "http://a.example/x", "HTTP://A.Example:80/y", "https://cdn.example.com/u/1.png?x=1#f", "http://127.0.0.1:8080",
        "https://h:443/", "http://h:1/a", "https://Sub.Domain.example:65535/p", "http://h?q", "http://h#f", "http://h:00080/x",
        "http://h:0/x", "HtTpS://H.Example:9/", "http://10.1.2.3/", "http://cafe.be/", "http://0x7f.0.0.1:9/", "http://127.1:9/",
    ])
    func plainOriginsMatchTheGeneralReading(url: String) throws {
        let separator = try #require(url.range(of: "://"))
        let withUser = url.replacingCharacters(in: separator, with: "://user:pw@")
        let plain = try #require(Origin.http(url)?.origin)
        let general = try #require(Origin.http(withUser)?.origin)
        #expect(plain == general, "\(url)")
        #expect(plain.name == general.name, "\(url)")
        #expect(!plain.name.contains("user"))
    }

    @Test(arguments: ["ftp://h/x", "http://h:99999/x", "http:///x", "http://h:+80/x", "http://h:80:90/x", "http://:80/x"])
    func malformedOnesHaveNone(url: String) {
        #expect(Origin.http(url) == nil, "\(url)")
    }

    @Test func namesKeepTheSpellingAndComparisonsTheOrigin() {
        #expect(Origin.of("http://127.0.0.1:8080/a").name == "http://127.0.0.1:8080")
        #expect(Origin.of("http://127.0.0.1:8080/a") == Origin.of("http://LOCALHOST:8080/b"))
        #expect(Origin.of("s3://bucket/a/b").name == "s3://bucket")
        #expect(Origin.of("s3://bucket/a") != Origin.of("s3://other/a"))
        #expect(Origin.of("http://u:secret@h/").name == "http://h:80")
    }
}

@Suite(.hangLimit) struct OriginMemoTests {
    init() { Kinds.install() }

    /// A run of URLs as a plan meets them: each gets `Origin.of`'s origin, the one object again
    /// for the same authority, a fresh reading for a longer host or port, another scheme or user
    /// info, or a URL of another kind in between.
    @Test func theMemoGivesOriginOfsAnswerAndSharesItPerAuthority() {
        let urls = [
            "http://cdn.test:8080/a", "http://cdn.test:8080/b?x", "http://cdn.test:8080#f", "http://cdn.test:8080",
            "http://cdn.test:8080\\i", "http://cdn.test:80801/c", "http://cdn.test:8080.evil.test/d", "http://cdn.test.evil.test:8080/e",
            "https://cdn.test:8080/f", "http://u@cdn.test:8080/g", "http://u@cdn.test:8080/h",
            "s3://bucket/k", "s3://bucket/l", "http://CDN.test:8080/m", "ftp://h/n", "http://cdn.test:8080/o",
        ]
        var memo = OriginMemo()
        var previous: Origin?
        var shared: [String] = []
        for url in urls {
            let origin = memo.origin(of: url)
            #expect(origin == Origin.of(url) && origin.name == Origin.of(url).name, "\(url)")
            if let previous, origin === previous { shared.append(url) }
            previous = origin
        }
        #expect(
            shared == ["http://cdn.test:8080/b?x", "http://cdn.test:8080#f", "http://cdn.test:8080", "http://u@cdn.test:8080/h"],
            "\(shared)")
    }
}
