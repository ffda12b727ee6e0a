import CCurl
import Foundation
import Testing
import WorkerManifest
import WorkerTestSupport

@testable import CurlTransport
@testable import WorkerFetch

/// The origin breaker as a plain value: events in, decisions out, time passed as numbers.
@Suite(.hangLimit) struct OriginBreakerTests {
    let origin = Origin.of("http://a.example:80")
    let other = Origin.of("http://b.example:80")
    let refused = OriginBreaker.Outcome.unhealthy(problem: "connection refused", retryAfter: nil)

    @Test func opensAfterConsecutiveFailedAttemptsAndRefusesTheRest() {
        var breaker = OriginBreaker(settings: .init(failedAttempts: 3, failedEntries: 100))
        #expect(breaker.admitEntry(origin, now: 0) == .go)
        #expect(breaker.record(origin, refused, now: 0).isEmpty)
        #expect(breaker.record(origin, refused, now: 0).isEmpty)
        #expect(breaker.record(origin, refused, now: 0) == [.opened(origin: origin, problem: "connection refused")])
        #expect(breaker.admitEntry(origin, now: 1) == .refuse("origin unreachable: \(origin) (connection refused); not tried"))
        #expect(breaker.admitRetry(origin, now: 1) == .refuse("origin unreachable: \(origin) (connection refused); not tried"))
        #expect(breaker.admitEntry(other, now: 1) == .go, "other origins go on")
        #expect(
            breaker.summaries == [
                .init(origin: origin, answered: false, openedFor: "connection refused", notTried: 1),
                .init(origin: other, answered: false, openedFor: nil, notTried: 0),
            ])
    }

    @Test func aHealthyAnswerResetsTheCount() {
        var breaker = OriginBreaker(settings: .init(failedAttempts: 3, failedEntries: 100))
        for _ in 0..<10 {
            _ = breaker.record(origin, refused, now: 0)
            _ = breaker.record(origin, refused, now: 0)
            #expect(breaker.record(origin, .healthy, now: 0).isEmpty)
        }
        #expect(breaker.admitEntry(origin, now: 0) == .go, "failures that never reach 3 in a row do not open it")
    }

    @Test func entriesThatGiveUpOpenItToo() {
        var breaker = OriginBreaker(settings: .init(failedAttempts: 1000, failedEntries: 2))
        _ = breaker.record(origin, .unhealthy(problem: "HTTP 503", retryAfter: nil), now: 0)
        #expect(breaker.entryGaveUp(origin).isEmpty)
        #expect(breaker.entryGaveUp(origin) == [.opened(origin: origin, problem: "HTTP 503")])
    }

    @Test func retryAfterPausesTheWholeOriginWithinTheCap() {
        var breaker = OriginBreaker(settings: .init(failedAttempts: 100, failedEntries: 100, maxPause: 30))
        _ = breaker.record(origin, .unhealthy(problem: "HTTP 429", retryAfter: 2), now: 10)
        #expect(breaker.admitEntry(origin, now: 11) == .wait(until: 12))
        #expect(breaker.admitRetry(origin, now: 11) == .wait(until: 12))
        #expect(breaker.admitEntry(origin, now: 12.5) == .go)
        #expect(breaker.admitEntry(other, now: 11) == .go)
        _ = breaker.record(origin, .unhealthy(problem: "HTTP 503", retryAfter: 3600), now: 20)
        #expect(breaker.admitEntry(origin, now: 21) == .wait(until: 50), "capped at maxPause")
    }

    @Test func anOriginRememberedAsDownIsProbedByOneEntry() {
        var breaker = OriginBreaker(down: [origin])
        #expect(breaker.admitEntry(origin, now: 0) == .probe)
        #expect(breaker.admitEntry(origin, now: 0) == .park, "the others wait for the probe")
        #expect(breaker.admitEntry(origin, now: 0) == .park)
        #expect(breaker.record(origin, .healthy, now: 1) == [.released(origin: origin)])
        #expect(breaker.admitEntry(origin, now: 1) == .go, "up again: everything goes")
        #expect(breaker.summaries.first?.answered == true)
    }

    @Test func aFailedProbeOpensAtOnce() {
        var breaker = OriginBreaker(down: [origin])
        #expect(breaker.admitEntry(origin, now: 0) == .probe)
        #expect(breaker.admitEntry(origin, now: 0) == .park)
        #expect(
            breaker.record(origin, refused, now: 0)
                == [.opened(origin: origin, problem: "connection refused"), .released(origin: origin)])
        #expect(
            breaker.admitRetry(origin, now: 0) == .refuse("origin unreachable: \(origin) (connection refused); not tried"),
            "the probe itself is not retried")
        if case .refuse = breaker.admitEntry(origin, now: 0) {} else { Issue.record("parked entries fail at once") }
    }

    // MARK: - What counts against an origin

    @Test func failuresThatSayNothingAboutTheOriginDoNotCount() {
        #expect(FailureClassifier.originProblem(FetchFailure(.httpStatus, "HTTP 404", httpStatus: 404)) == nil)
        #expect(FailureClassifier.originProblem(FetchFailure(.hashMismatch, "expected …")) == nil)
        #expect(FailureClassifier.originProblem(FetchFailure(.io, "disk full")) == nil)
        #expect(FailureClassifier.originProblem(FetchFailure(.connection, "TLS: not trusted", detail: .tls(.untrustedCertificate))) == nil)
        #expect(FailureClassifier.originProblem(FetchFailure(.httpStatus, "HTTP 503", httpStatus: 503)) == "HTTP 503")
        #expect(FailureClassifier.originProblem(FetchFailure(.httpStatus, "HTTP 429", httpStatus: 429)) == "HTTP 429")
        #expect(FailureClassifier.originProblem(FetchFailure(.connection, "connection refused")) == "connection refused")
        #expect(FailureClassifier.originProblem(FetchFailure(.timeout, "connect timeout")) == "connect timeout")
    }

    @Test func socketErrorsAreSaidInPlainWords() {
        let url = "https://files.example:8443/a"
        func classify(_ code: CURLcode, _ osErrno: Int32 = 0) -> FetchFailure {
            CurlFailure.failure(code, osErrno: osErrno, url: url)
        }
        #expect(classify(CURLE_COULDNT_CONNECT, ECONNREFUSED).message == "connection refused")
        #expect(classify(CURLE_RECV_ERROR, ECONNRESET).message == "connection reset by the server")
        #expect(classify(CURLE_COULDNT_RESOLVE_HOST).message == "host not found: files.example:8443")
        #expect(classify(CURLE_OPERATION_TIMEDOUT).reason == .timeout)
        #expect(classify(CURLE_GOT_NOTHING).message == "the server closed the connection without an answer")
        let truncated = classify(CURLE_PARTIAL_FILE)
        #expect(truncated.reason == .connection && truncated.message.hasPrefix("truncated body"))
        #expect(classify(CURLE_PEER_FAILED_VERIFICATION).detail == .tls(.untrustedCertificate))
        #expect(classify(CURLE_PEER_FAILED_VERIFICATION).isPermanent)
        #expect(classify(CURLE_SSL_CONNECT_ERROR).detail == .tls(.handshakeRejected))
        #expect(classify(CURLE_HTTP2_STREAM).message.hasPrefix("connection failed: "))
    }

    @Test func retryAfterIsSecondsOrADate() {
        #expect(FailureClassifier.parseRetryAfter(" 7 ") == 7)
        let inOneMinute = FailureClassifier.parseRetryAfter(Self.httpDate(Date().addingTimeInterval(60)))
        #expect(inOneMinute.map { (55...61).contains($0) } == true)
        #expect(FailureClassifier.parseRetryAfter("soon") == nil)
    }

    static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}
