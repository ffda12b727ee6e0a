import Testing
import WorkerKinds
import WorkerTestSupport

@testable import WorkerFetch
@testable import WorkerManifest

/// The pieces of mirrors as values: which origin admits a group, which mirrors a manifest map
/// gives. No I/O (`--rewrite`'s rules: URLRewriteTests).
@Suite(.hangLimit) struct MirrorPartsTests {
    init() { Kinds.install() }

    let a = Origin.of("http://a.test:80")
    let b = Origin.of("http://b.test:80")
    let c = Origin.of("http://c.test:80")
    let refused = OriginReport(outcome: .unhealthy(problem: "connection refused", retryAfter: nil))

    @Test func aGroupWhoseOriginWasGivenUpStartsInItsFirstLiveMirrorsWindow() {
        var schedule = DownloadSchedule(origins: [a, a, a, a], alternates: [1: [b, c], 2: [c]], jobs: 1)
        #expect(DownloadScheduleTests.started(schedule.take(now: 0)) == [0])
        // Group 0 fails on `a` four times over (entries giving up): `a` is given up.
        for _ in 0..<4 { _ = schedule.entryGaveUp(a, now: 0) }
        #expect(schedule.breaker.isOpen(a))
        let steps = schedule.finished(0, now: 1)
        // Group 1 goes to b's window, group 2 to c's; group 3 has no mirror and is refused.
        #expect(DownloadScheduleTests.started(steps) == [1, 2])
        #expect(steps.contains { if case .refuse(3, _) = $0 { true } else { false } })
        #expect(schedule.windows[b]?.inFlight == 1 && schedule.windows[c]?.inFlight == 1)
        _ = schedule.finished(1, now: 2)
        _ = schedule.finished(2, now: 2)
        #expect(schedule.windows[b]?.inFlight == 0 && schedule.windows[c]?.inFlight == 0, "each slot is given back where it was taken")
        #expect(schedule.windows[a]?.inFlight == 0)
    }

    @Test func aGroupWithEveryOriginGivenUpIsRefused() {
        var schedule = DownloadSchedule(origins: [a, a], alternates: [1: [b]], jobs: 1)
        _ = schedule.take(now: 0)
        for origin in [a, b] { for _ in 0..<4 { _ = schedule.entryGaveUp(origin, now: 0) } }
        let steps = schedule.finished(0, now: 1)
        #expect(steps.contains { if case .refuse(1, _) = $0 { true } else { false } })
    }

    @Test func aPinnedRequestTriesItsOwnMirrorsThenTheMapsOnceEachAndAHashlessOneNone() throws {
        let hash = try ContentHash.parse("sha256:" + String(repeating: "ab", count: 32)).get()
        var manifest = Manifest(path: "m.yaml", name: "m", baseURL: nil, headers: [], localRoot: "/", entryCount: 1)
        manifest.mirrors = ManifestMirrors([.init(prefix: "https://cdn.test/", mirrors: ["https://m1.test/", "https://m2.test/c/"])])
        let pinned = ManifestEntry(
            url: "https://cdn.test/x.png", hash: hash, manifest: 0, line: 1, column: 1,
            mirrors: ["https://m2.test/c/x.png", "https://own.test/x.png"])
        #expect(manifest.mirrors.of(pinned) == ["https://m2.test/c/x.png", "https://own.test/x.png", "https://m1.test/x.png"])
        let hashless = ManifestEntry(url: "https://cdn.test/y.png", hash: nil, manifest: 0, line: 2, column: 1)
        #expect(manifest.mirrors.of(hashless).isEmpty)

        var locator = Locator()
        locator.rewrite = try URLRewrite.parse(["https://own.test/=https://m1.test/"]).get()
        let request = FetchRequest(
            url: pinned.url, expected: hash, headers: [RequestHeader(name: "Authorization", value: "t")],
            localRoot: nil, mirrors: manifest.mirrors.of(pinned), locator: locator)
        // own.test is rewritten to what m1.test already serves: each URL is asked once.
        let locations = (0..<request.locationCount).map(request.location(at:))
        #expect(locations.map(\.url) == ["https://cdn.test/x.png", "https://m2.test/c/x.png", "https://m1.test/x.png"])
        #expect(locations.map(\.listed) == ["https://cdn.test/x.png", "https://m2.test/c/x.png", "https://own.test/x.png"])
        #expect((0..<request.locationCount).map(request.origin(ofLocation:)) == locations.map(\.origin))
        // The manifest's headers go to its own origin only.
        #expect(request.sent(toLocation: 0).request === request)
        #expect(request.sent(toLocation: 1).request.headers.isEmpty)
        let unpinned = FetchRequest(url: hashless.url, expected: nil, headers: [], localRoot: nil, mirrors: ["https://m1.test/y.png"])
        #expect(unpinned.mirrors.isEmpty)
    }

    @Test func anEntrysMirrorsAreAListOrOneURLAndTheMapTakesAPrefixOrAList() throws {
        let directory = TemporaryDirectory()
        let hash = "sha256:" + String(repeating: "ab", count: 32)
        let path = directory.write(
            "m.yaml",
            """
            version: 1
            entries:
              - url: https://cdn.test/a.png
                hash: \(hash)
                mirrors: https://one.test/a.png
              - url: https://cdn.test/b/c.png
                hash: \(hash)
                mirrors: [https://two.test/c.png, "s3://bucket/c.png"]
            mirrors:
              "https://cdn.test/b/": ["https://m1.test/", "s3://bucket/b/"]
              "https://cdn.test/": https://m2.test/

            """)
        let set = try ManifestLoader(environment: [:]).load(paths: [path])
        let manifest = set.manifests[0]
        #expect(manifest.mirrors.of(set.entries[0]) == ["https://one.test/a.png", "https://m2.test/a.png"])
        #expect(
            manifest.mirrors.of(set.entries[1]) == [
                "https://two.test/c.png", "s3://bucket/c.png", "https://m1.test/c.png",
                "s3://bucket/b/c.png", "https://m2.test/b/c.png",
            ])
    }
}
