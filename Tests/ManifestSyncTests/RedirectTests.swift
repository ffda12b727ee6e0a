import Testing
import WorkerTestSupport
@testable import WorkerFetch

@Suite(.hangLimit) struct RedirectTests {
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
        #expect(failure(target("https://a.example/x", "http://a.example/x")) == FetchFailure(.redirect, "redirect from https to http refused"))
    }

    @Test func otherSchemesAreRefused() {
        #expect(failure(target("http://a.example/x", "file:///etc/passwd")) == FetchFailure(.scheme, "redirect to a 'file' URL refused (only http and https)"))
        #expect(failure(target("http://a.example/x", "ftp://a.example/x")) == FetchFailure(.scheme, "redirect to a 'ftp' URL refused (only http and https)"))
    }

    @Test func loopsLimitsAndMissingLocation() {
        #expect(failure(target("http://a.example/y", "/x", visited: ["http://a.example/x"])) == FetchFailure(.redirect, "redirect loop at http://a.example/x"))
        #expect(failure(target("http://a.example/x", "/y", hop: 5)) == FetchFailure(.redirect, "more than 5 redirects"))
        #expect(failure(target("http://a.example/x", nil)) == FetchFailure(.redirect, "HTTP 302 redirect without a Location"))
    }

    @Test func originComparesSchemeHostAndPort() {
        #expect(Fetcher.origin(of: "http://A.example/x") == Fetcher.origin(of: "http://a.example:80/y"))
        #expect(Fetcher.origin(of: "https://a.example/x") != Fetcher.origin(of: "http://a.example/x"))
        #expect(Fetcher.origin(of: "http://a.example:8080/") != Fetcher.origin(of: "http://a.example/"))
    }
}

/// The byte-level origin reader agrees with Foundation wherever it answers.
@Suite(.hangLimit) struct OriginKeyTests {
    @Test(arguments: [
        "http://a.example/x", "HTTP://A.Example:80/y", "https://cdn.example.com/u/1.png?x=1#f", "http://127.0.0.1:8080",
        "https://h:443/", "http://h:1/a", "https://Sub.Domain.example:65535/p", "http://h?q", "http://h#f", "http://h:00080/x",
        "http://h:0/x", "HtTpS://H.Example:9/",
    ])
    func plainOriginsMatchFoundation(url: String) {
        let fast = Fetcher.plainOrigin(url)
        #expect(fast != nil)
        #expect(fast == Fetcher.foundationOrigin(url), "\(url)")
    }

    @Test(arguments: ["http://user:pw@h/x", "http://[::1]:8080/x", "ftp://h/x", "http://h:99999/x", "http://h:/x", "http:///x",
                       "http://h:+80/x", "http://h:80:90/x", "http://:80/x", "http://h%41/x"])
    func unusualOnesGoThroughFoundation(url: String) {
        #expect(Fetcher.plainOrigin(url) == nil, "\(url)")
        #expect(Fetcher.origin(of: url) == Fetcher.foundationOrigin(url))
    }
}
