import Testing
import WorkerKinds
import WorkerManifest
import WorkerTestSupport

@testable import WorkerFetch

/// A route as a value: where an item is fetched, worked out once, and the requests made from it
/// without locating the URL again. No I/O.
@Suite(.hangLimit) struct RouteTests {
    init() { Kinds.install() }

    let hash = try! ContentHash.parse("sha256:" + String(repeating: "ab", count: 32)).get()

    static func locator(_ rules: [String]) throws -> Locator {
        var locator = Locator()
        locator.rewrite = try URLRewrite.parse(rules).get()
        return locator
    }

    @Test func anHTTPURLAsListedKeepsNoStringAndItsRequestAsksItThere() throws {
        let locator = try Self.locator(["https://other.test/=http://proxy.test:8080/o/"])
        let route = locator.route("https://cdn.test/a/b.png", expected: nil)
        #expect(route.origin == Origin.of("https://cdn.test/"))
        #expect(route.ruleNumber == nil && route.keptLocation == nil && route.mirrors.isEmpty)
        let first = try #require(locator.locations(of: route, listed: "https://cdn.test/a/b.png").first)
        #expect(first.url == "https://cdn.test/a/b.png" && first.origin == route.origin)
    }

    @Test func aRewrittenURLNamesItsRuleAndItsRequestGoesWhereTheRuleSends() throws {
        let locator = try Self.locator(["https://other.test/=http://proxy.test:8080/o/", "https://cdn.test/=http://127.0.0.1:9/c/"])
        let route = locator.route("HTTPS://cdn.test:443/a/b.png", expected: nil)
        #expect(route.ruleNumber == 1, "the second rule covers it")
        #expect(route.origin == Origin.of("http://127.0.0.1:9/"))
        let request = FetchRequest(
            url: "HTTPS://cdn.test:443/a/b.png", expected: nil, headers: [], localRoot: nil, locator: locator,
            route: route)
        #expect(request.location(at: 0).url == "http://127.0.0.1:9/c/a/b.png")
        #expect(request.location(at: 0).listed == "HTTPS://cdn.test:443/a/b.png")
        // The same request worked out by the locator itself.
        let located = FetchRequest(url: "HTTPS://cdn.test:443/a/b.png", expected: nil, headers: [], localRoot: nil, locator: locator)
        #expect(located.location(at: 0) == request.location(at: 0))
    }

    @Test func aPinnedItemsMirrorsAreLocatedOnceEachAndAHashlessOneHasNone() throws {
        let locator = try Self.locator(["https://own.test/=https://m1.test/"])
        let mirrors = ["https://m2.test/x.png", "https://own.test/x.png", "https://m1.test/x.png", "https://cdn.test/x.png"]
        let route = locator.route("https://cdn.test/x.png", mirrors: mirrors, expected: hash)
        // own.test is rewritten to what m1.test serves, and the entry's own URL is not a mirror.
        #expect(route.mirrors.map(\.url) == ["https://m2.test/x.png", "https://m1.test/x.png"])
        #expect(route.mirrors.map(\.listed) == ["https://m2.test/x.png", "https://own.test/x.png"])
        #expect(route.mirrorOrigins == [Origin.of("https://m2.test/"), Origin.of("https://m1.test/")])
        #expect(locator.route("https://cdn.test/x.png", mirrors: mirrors, expected: nil).mirrors.isEmpty)
    }

    @Test func aKindsLocationIsKeptWholeWithItsSigning() throws {
        let locator = try Locator().configuring(
            [URLKindID("s3")],
            environment: [
                "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_REGION": "eu-west-1",
                "AWS_CONFIG_FILE": "/nonexistent", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
            ])
        let route = locator.route("s3://bucket/key/a.bin", expected: nil)
        let kept = try #require(route.keptLocation)
        #expect(kept.url == "https://bucket.s3.eu-west-1.amazonaws.com/key/a.bin" && kept.signing != nil)
        #expect(route.origin == kept.origin && route.ruleNumber == nil)
        let request = FetchRequest(url: "s3://bucket/key/a.bin", expected: nil, headers: [], localRoot: nil, locator: locator, route: route)
        #expect(request.location(at: 0) == kept && request.carriesCredentials)
    }

    @Test func aLocalFileHasNoRoute() throws {
        let route = try Self.locator(["https://cdn.test/=http://127.0.0.1:9/"]).route(
            "file:///srv/a.txt", mirrors: ["https://cdn.test/a"],
            expected: hash)
        #expect(route.origin == nil && route.mirrors.isEmpty)
        let request = FetchRequest(url: "file:///srv/a.txt", expected: hash, headers: [], localRoot: "/srv", route: route)
        #expect(request.origin == nil && request.locationCount == 0)
    }
}
