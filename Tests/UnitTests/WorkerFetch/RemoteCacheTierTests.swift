import Logging
import Testing
import WorkerTestSupport

@testable import WorkerFetch

/// The shared tier's rules without a server: when it is given up, what each answer means for
/// the entry and the counts, and which settings are refused.
@Suite(.hangLimit) struct RemoteCacheTierTests {
    @Test func errorsInARowGiveTheTierUpOnceAndAnAnswerClearsThem() {
        var health = RemoteTierHealth(limit: 3)
        let opened = [health.failed("refused"), health.failed("refused")]
        #expect(opened == [false, false])
        health.answered()
        #expect(health.errorsInRow == 0, "an answer clears the count")
        let again = [health.failed("timeout"), health.failed("timeout"), health.failed("HTTP 503"), health.failed("HTTP 503")]
        #expect(again == [false, false, true, false], "the third in a row gives it up, once (one warning)")
        #expect(health.givenUp == "HTTP 503" && !health.isUsable)
        health.answered()
        #expect(!health.isUsable, "a late answer does not bring it back within the run")
    }

    @Test func aTierClearlySlowerThanTheOriginIsGivenUpOnceBothSidesHaveEnough() {
        var pace = RemoteTierPace()
        // Three tier bodies at 10 KB/s and four origin bodies at 1 MB/s: too few tier bodies yet.
        for _ in 0..<3 { #expect(pace.add(.tier, bytes: 10_000, seconds: 1) == nil) }
        for _ in 0..<4 { #expect(pace.add(.origin, bytes: 1_000_000, seconds: 1) == nil) }
        let why = pace.add(.tier, bytes: 10_000, seconds: 1)
        #expect(why?.contains("the origin") == true, "\(why ?? "nil")")
        // Within four times the origin's pace, a tier stays.
        var close = RemoteTierPace()
        for _ in 0..<4 { _ = close.add(.origin, bytes: 1_000_000, seconds: 1) }
        for _ in 0..<8 { #expect(close.add(.tier, bytes: 300_000, seconds: 1) == nil) }
        // Fast tier bodies (under a second in all) are not judged: latency, not pace.
        var quick = RemoteTierPace()
        for _ in 0..<4 { _ = quick.add(.origin, bytes: 1_000_000, seconds: 0.01) }
        for _ in 0..<8 { #expect(quick.add(.tier, bytes: 100, seconds: 0.01) == nil) }
        // Nonsense is ignored.
        #expect(quick.add(.tier, bytes: 10, seconds: .nan) == nil && quick.add(.tier, bytes: 0, seconds: 1) == nil)
    }

    private func tier() throws -> RemoteTier {
        let settings = try RemoteCacheSettings.make(url: "http://127.0.0.1:9/team", headers: [], environment: [:]).get()
        return RemoteTier(settings: settings, logger: Logger(label: "test"))
    }

    private func reply(_ result: Result<ExchangeOutcome, FetchFailure>, bytes: Int64 = 0) -> ExchangeReply {
        ExchangeReply(result: result, bytes: bytes, multiplexed: false, closesConnection: false)
    }

    private func isMiss(_ outcome: SourceOutcome) -> Bool {
        if case .miss = outcome.answer { return outcome.attempts == 0 }
        return false
    }

    @Test func aBodyIsAHitAnd404OrARedirectAMiss() throws {
        let tier = try tier()
        let file = VerifiedFile(path: "/tmp/x", sha256: String(repeating: "b", count: 64), size: 5)
        let hit = RemoteCacheLookup.outcome(of: reply(.success(.body(file, etag: nil, lastModified: nil)), bytes: 5), tier: tier)
        guard case .delivered(.body(let body)) = hit.answer else {
            Issue.record("expected a delivery, got \(hit.answer)")
            return
        }
        #expect(body.sha256 == file.sha256 && hit.bytes == 5)
        #expect(isMiss(RemoteCacheLookup.outcome(of: reply(.success(.status(404, retryAfter: nil))), tier: tier)))
        #expect(isMiss(RemoteCacheLookup.outcome(of: reply(.success(.redirect(status: 302, location: "/x"))), tier: tier)))
        let counts = tier.summary
        #expect(counts.hits == 1 && counts.misses == 2 && counts.bytesDown == 5 && counts.errors == 0)
    }

    @Test func whateverTheTierGetsWrongTheEntryGoesToTheOrigin() throws {
        let tier = try tier()
        let mismatch = FetchFailure(.hashMismatch, "the body does not match")
        let cut = FetchFailure(.connection, "truncated body: received 10 of 20 bytes")
        let refused = FetchFailure(.connection, "connection refused")
        #expect(isMiss(RemoteCacheLookup.outcome(of: reply(.failure(mismatch), bytes: 40), tier: tier)))
        #expect(isMiss(RemoteCacheLookup.outcome(of: reply(.failure(cut), bytes: 10), tier: tier)))
        #expect(tier.isUsable)
        #expect(isMiss(RemoteCacheLookup.outcome(of: reply(.success(.status(503, retryAfter: 5))), tier: tier)))
        #expect(!tier.isUsable, "three errors in a row")
        #expect(isMiss(RemoteCacheLookup.outcome(of: reply(.failure(refused)), tier: tier)))
        let counts = tier.summary
        #expect(counts.corrupt == 2 && counts.errors == 2 && counts.bytesDown == 50)
        // A stop is the run's, not the tier's: it ends the walk.
        let stopped = RemoteCacheLookup.outcome(of: reply(.failure(FetchFailure(.cancelled, "stopped"))), tier: tier)
        guard case .failed(let failure) = stopped.answer else {
            Issue.record("expected the stop, got \(stopped.answer)")
            return
        }
        #expect(failure.reason == .cancelled)
    }

    @Test func theTierURLAndHeadersAreCheckedAndTheObjectURLHasOneSlash() throws {
        let environment = ["TOKEN": "s3cret"]
        let made = try RemoteCacheSettings.make(
            url: "https://user:pw@cache.internal:8443/team//",
            headers: ["Authorization: Bearer ${TOKEN}"], environment: environment
        ).get()
        #expect(made.objectURL("ab") == "https://user:pw@cache.internal:8443/team/cas/ab")
        #expect(made.shownURL == "https://cache.internal:8443/team")
        #expect(made.headers == ["Authorization: Bearer s3cret"])
        let plain = try RemoteCacheSettings.make(url: "http://127.0.0.1:8080", headers: [], environment: [:]).get()
        #expect(plain.objectURL("ab") == "http://127.0.0.1:8080/cas/ab")
        for bad in ["ftp://host/x", "http://", "host:8080", "http://h/x?y", "http://h/#f", "http://h /x", ""] {
            guard case .failure = RemoteCacheSettings.make(url: bad, headers: [], environment: [:]) else {
                Issue.record("accepted \(bad)")
                continue
            }
        }
        for header in ["no colon", "Bad Name: x", "Range: bytes=0-", "X: ${UNSET}", "X: a${TOKEN"] {
            guard case .failure(let problem) = RemoteCacheSettings.make(url: "http://h", headers: [header], environment: environment) else {
                Issue.record("accepted \(header)")
                continue
            }
            #expect(!problem.message.contains("s3cret"))
        }
    }
}

@Suite struct TierCollectionsTests {
    @Test func theCollectionsGoFromTheTopOfThePathDownToCas() throws {
        let deep = try RemoteCacheSettings.make(url: "http://127.0.0.1:8080/teams/tier", headers: [], environment: [:]).get()
        #expect(
            deep.collectionURLs == [
                "http://127.0.0.1:8080/teams/", "http://127.0.0.1:8080/teams/tier/",
                "http://127.0.0.1:8080/teams/tier/cas/",
            ])
        let top = try RemoteCacheSettings.make(url: "http://127.0.0.1:8080", headers: [], environment: [:]).get()
        #expect(top.collectionURLs == ["http://127.0.0.1:8080/cas/"])
    }
}
