import Testing
import WorkerTestSupport

@testable import WorkerFetch
@testable import WorkerManifest
@testable import WorkerStore

/// One download's rules as a value: events in, actions out, answered by a scripted fake
/// transport and gate. No sockets, no clock: times and jitter are plain numbers.
@Suite(.hangLimit) struct DownloadMachineTests {
    typealias Action = DownloadMachine.Action

    static let file = VerifiedFile(path: "/cache/tmp/dl-1", sha256: String(repeating: "b", count: 64), size: 5)

    static func reply(_ result: Result<ExchangeOutcome, FetchFailure>, bytes: Int64 = 0) -> ExchangeReply {
        ExchangeReply(result: result, bytes: bytes, multiplexed: false, closesConnection: false)
    }

    static let body = reply(.success(.body(file, etag: "\"v1\"", lastModified: nil)), bytes: 5)
    static let refused = reply(.failure(FetchFailure(.connection, "connection refused")))

    static func request(_ url: String = "http://127.0.0.1:8080/a", etag: String? = nil) -> FetchRequest {
        FetchRequest(
            url: url, expected: nil, headers: [RequestHeader(name: "Authorization", value: "Bearer t")],
            localRoot: nil, etag: etag)
    }

    /// Runs a download to its end: each `send` is answered by the next scripted reply, each
    /// `takeSlot` by the next slot delay, each `admitRetry` by the next decision; waits fire at
    /// once (or not, with `stopAtWait`). Returns every action, in order.
    struct FakeTransport {
        var replies: [ExchangeReply]
        var slots: [Double] = []
        var decisions: [RetryDecision] = []
        var kept: PartialDownloads.Resume?
        var stopAtWait: String?
        var jitter = 1.0

        mutating func run(_ machine: inout DownloadMachine, now: Double = 100) -> [Action] {
            var trace: [Action] = []
            var pending = machine.start(now: now)
            var clock = now
            while !pending.isEmpty {
                trace += pending
                guard let last = pending.last else { break }
                switch last {
                case .findResume:
                    pending = machine.resumeFound(kept)
                case .takeSlot:
                    pending = machine.slotTaken(delay: slots.isEmpty ? 0 : slots.removeFirst())
                case .wait(let seconds), .backOff(let seconds, _):
                    clock += seconds
                    pending = machine.waited(fired: stopAtWait == nil, now: clock, stopped: stopAtWait)
                case .send:
                    guard !replies.isEmpty else {
                        Issue.record("a request the script did not expect")
                        return trace
                    }
                    pending = machine.exchanged(replies.removeFirst(), jitter: jitter, stopped: nil)
                case .admitRetry:
                    pending = machine.retryAdmitted(decisions.isEmpty ? .go : decisions.removeFirst())
                case .finish, .report, .gaveUp:
                    pending = []
                }
            }
            return trace
        }
    }

    static func sends(_ trace: [Action]) -> [DownloadMachine.Exchange] {
        trace.compactMap { if case .send(let exchange) = $0 { exchange } else { nil } }
    }

    static func finished(_ trace: [Action]) -> DownloadMachine.Finished? {
        if case .finish(let finished) = trace.last { finished } else { nil }
    }

    // MARK: - Attempts

    @Test func aBodyOnTheFirstTryIsOneAttempt() {
        var machine = DownloadMachine(request: Self.request(), rules: .init())
        var transport = FakeTransport(replies: [Self.body])
        let trace = transport.run(&machine, now: 100)
        #expect(trace.first == .findResume)
        let sends = Self.sends(trace)
        #expect(
            sends == [
                DownloadMachine.Exchange(
                    url: "http://127.0.0.1:8080/a", hop: 0, headers: ["Authorization: Bearer t"],
                    deadline: 100 + 600, resume: nil)
            ])
        let finished = Self.finished(trace)
        #expect(finished?.attempts == 1)
        #expect(finished?.bytes == 5)
        #expect(
            finished?.result
                == .success(
                    .body(
                        FetchedBody(
                            temporaryPath: Self.file.path, sha256: Self.file.sha256,
                            size: 5, etag: "\"v1\"", lastModified: nil))))
        #expect(machine.state == .done)
    }

    @Test func transientFailuresAreRetriedWithBackoffThenGivenUp() {
        var machine = DownloadMachine(
            request: Self.request(),
            rules: .init(retry: RetryPolicy(retries: 2, baseDelay: 1, maxDelay: 30)))
        var transport = FakeTransport(replies: [Self.refused, Self.refused, Self.refused], jitter: 0)
        let trace = transport.run(&machine)
        let backoffs = trace.compactMap { if case .backOff(let seconds, let reason) = $0 { (seconds, reason) } else { nil } }
        // Full jitter in the upper half of the window: jitter 0 waits half of 1 s, then of 2 s.
        #expect(backoffs.map(\.0) == [0.5, 1.0])
        #expect(backoffs.allSatisfy { $0.1 == .connection })
        #expect(Self.sends(trace).count == 3)
        #expect(Self.finished(trace)?.attempts == 3)
        #expect(Self.finished(trace)?.result == .failure(FetchFailure(.connection, "connection refused")))
    }

    @Test func eachAttemptHasItsOwnEntryDeadline() {
        var machine = DownloadMachine(
            request: Self.request(),
            rules: .init(retry: RetryPolicy(retries: 1, baseDelay: 4, maxDelay: 30), entryTimeout: 60))
        var transport = FakeTransport(replies: [Self.refused, Self.body], jitter: 1)
        let sends = Self.sends(transport.run(&machine, now: 10))
        #expect(sends.map(\.deadline) == [70, 74], "the second attempt starts 4 s later, with 60 s of its own")
    }

    @Test func retryAfterIsWaitedAndAPermanentFailureIsNotRetried() {
        var machine = DownloadMachine(request: Self.request(), rules: .init())
        var transport = FakeTransport(replies: [Self.reply(.success(.status(503, retryAfter: 7))), Self.body])
        let trace = transport.run(&machine)
        #expect(trace.contains(.backOff(seconds: 7, after: .httpStatus)))
        #expect(Self.finished(trace)?.attempts == 2)

        var notFound = DownloadMachine(request: Self.request(), rules: .init())
        var once = FakeTransport(replies: [Self.reply(.success(.status(404, retryAfter: nil)))])
        let result = Self.finished(once.run(&notFound))
        #expect(result?.attempts == 1)
        #expect(result?.result == .failure(FetchFailure(.httpStatus, "HTTP 404", httpStatus: 404)))
    }

    // MARK: - The origin gate

    @Test func everyAttemptIsToldToTheGateAndItDecidesRetries() {
        var machine = DownloadMachine(request: Self.request(), rules: .init(reportsToGate: true))
        var transport = FakeTransport(replies: [Self.refused, Self.refused], decisions: [.wait(seconds: 9), .giveUp], jitter: 0)
        let trace = transport.run(&machine)
        let unhealthy = Action.report(OriginReport(outcome: .unhealthy(problem: "connection refused", retryAfter: nil)))
        #expect(trace.filter { $0 == unhealthy }.count == 2)
        #expect(trace.contains(.backOff(seconds: 9, after: .connection)), "the origin's pause is longer than the backoff")
        // The origin was given up while the entry waited: an origin problem, told once.
        #expect(Array(trace.suffix(2)).first == .gaveUp)
        #expect(Self.finished(trace)?.attempts == 2)
    }

    @Test func aHealthyAnswerIsReportedAndA404IsNoOriginProblem() {
        var machine = DownloadMachine(request: Self.request(), rules: .init(reportsToGate: true))
        var transport = FakeTransport(replies: [Self.reply(.success(.status(404, retryAfter: nil)))])
        let trace = transport.run(&machine)
        #expect(trace.contains(.report(OriginReport(outcome: .healthy))))
        #expect(!trace.contains(.gaveUp))
        #expect(!trace.contains(.admitRetry))
    }

    @Test func overloadIsToldToTheGate() {
        var machine = DownloadMachine(request: Self.request(), rules: .init(retry: RetryPolicy(retries: 0), reportsToGate: true))
        var transport = FakeTransport(replies: [Self.reply(.success(.status(429, retryAfter: 3)))])
        let trace = transport.run(&machine)
        #expect(trace.contains(.report(OriginReport(outcome: .unhealthy(problem: "HTTP 429", retryAfter: 3), overloaded: true))))
    }

    // MARK: - Redirects

    @Test func aRedirectIsAHopOfTheSameAttemptAndHeadersStayOnTheirOrigin() {
        var machine = DownloadMachine(request: Self.request(), rules: .init())
        var transport = FakeTransport(replies: [
            Self.reply(.success(.redirect(status: 302, location: "/b"))),
            Self.reply(.success(.redirect(status: 301, location: "http://127.0.0.2:8080/c"))),
            Self.body,
        ])
        let trace = transport.run(&machine)
        let sends = Self.sends(trace)
        #expect(sends.map(\.url) == ["http://127.0.0.1:8080/a", "http://127.0.0.1:8080/b", "http://127.0.0.2:8080/c"])
        #expect(sends.map(\.hop) == [0, 1, 2])
        #expect(
            sends.map(\.headers) == [["Authorization: Bearer t"], ["Authorization: Bearer t"], []],
            "the manifest's headers never go to another origin")
        #expect(Self.finished(trace)?.attempts == 1)
    }

    @Test func redirectLoopsAndTooManyHopsFail() {
        var looping = DownloadMachine(request: Self.request(), rules: .init())
        var loop = FakeTransport(replies: [
            Self.reply(.success(.redirect(status: 302, location: "/b"))),
            Self.reply(.success(.redirect(status: 302, location: "/a"))),
        ])
        #expect(
            Self.finished(loop.run(&looping))?.result
                == .failure(FetchFailure(.redirect, "redirect loop at http://127.0.0.1:8080/a")))

        var far = DownloadMachine(request: Self.request(), rules: .init(maxRedirects: 1))
        var hops = FakeTransport(replies: [
            Self.reply(.success(.redirect(status: 302, location: "/b"))),
            Self.reply(.success(.redirect(status: 302, location: "/c"))),
        ])
        #expect(Self.finished(hops.run(&far))?.result == .failure(FetchFailure(.redirect, "more than 1 redirects")))
    }

    // MARK: - Resume and conditional requests

    @Test func aKeptPartIsAskedForTheRestOfAndAConditionalRequestNeverResumes() {
        let kept = PartialDownloads.Resume(path: "/cache/partial/x", offset: 1000, validator: "\"v1\"")
        var machine = DownloadMachine(request: Self.request(), rules: .init())
        var transport = FakeTransport(replies: [Self.body], kept: kept)
        let sends = Self.sends(transport.run(&machine))
        #expect(sends.first?.headers == ["Authorization: Bearer t", "Range: bytes=1000-", "If-Range: \"v1\""])
        #expect(sends.first?.resume == kept)

        var conditional = DownloadMachine(request: Self.request(etag: "\"v0\""), rules: .init())
        var revalidate = FakeTransport(replies: [Self.reply(.success(.notModified))], kept: kept)
        let trace = revalidate.run(&conditional)
        #expect(!trace.contains(.findResume))
        #expect(Self.sends(trace).first?.headers == ["Authorization: Bearer t", "If-None-Match: \"v0\""])
        #expect(Self.finished(trace)?.result == .success(.notModified))
    }

    // MARK: - --max-rps slots and stops

    @Test func everyHopTakesItsOriginsSlotAndWaitsForIt() {
        var machine = DownloadMachine(request: Self.request(), rules: .init(pacesRequests: true))
        var transport = FakeTransport(
            replies: [
                Self.reply(.success(.redirect(status: 302, location: "http://127.0.0.2:9/b"))),
                Self.body,
            ],
            slots: [0, 0.25])
        let trace = transport.run(&machine)
        let slots = trace.compactMap { if case .takeSlot(let origin) = $0 { origin } else { nil } }
        #expect(slots.map(\.name) == ["http://127.0.0.1:8080", "http://127.0.0.2:9"])
        #expect(trace.contains(.wait(seconds: 0.25)))
        #expect(Self.sends(trace).count == 2)
    }

    @Test func aStopDuringAWaitEndsTheDownloadAsCancelledWithItsReason() {
        var machine = DownloadMachine(request: Self.request(), rules: .init(pacesRequests: true))
        var transport = FakeTransport(replies: [], slots: [2], stopAtWait: "the run's deadline (--deadline 1s) passed")
        let trace = transport.run(&machine)
        #expect(Self.sends(trace).isEmpty)
        #expect(Self.finished(trace)?.result == .failure(FetchFailure(.cancelled, "the run's deadline (--deadline 1s) passed")))
    }

    @Test func aStoppedExchangeIsNeitherToldToTheGateNorRetried() {
        var machine = DownloadMachine(request: Self.request(), rules: .init(reportsToGate: true))
        _ = machine.start(now: 0)
        _ = machine.resumeFound(nil)
        let actions = machine.exchanged(
            Self.reply(.failure(FetchFailure(.cancelled, "the run was cancelled")), bytes: 40),
            jitter: 0, stopped: "the run was stopped by SIGTERM")
        #expect(
            actions == [
                .finish(
                    DownloadMachine.Finished(
                        result: .failure(FetchFailure(.cancelled, "the run was stopped by SIGTERM")), attempts: 1, bytes: 40))
            ])
    }

    @Test func answersThatDoNotFitTheStateAreIgnored() {
        var machine = DownloadMachine(request: Self.request(), rules: .init())
        _ = machine.start(now: 0)
        #expect(machine.exchanged(Self.body, jitter: 0, stopped: nil) == [], "nothing was sent yet")
        #expect(machine.slotTaken(delay: 1) == [])
        #expect(machine.state == .findingResume)
    }
}
