import Synchronization
import Testing
import WorkerManifest
import WorkerTestSupport

@testable import WorkerFetch
@testable import WorkerSupport

/// What stops a run's downloads (a `StopRequest`, through `FetchControl.swift`'s `register`, `send`
/// and `wait`) and `--max-rps`'s slots (`RateLimits`), with
/// plain numbers and the local engine's timers: no sockets.
@Suite(.hangLimit) struct FetchControlTests {
    @Test func aStopCancelsWhatWaitsAndWhatRegistersAfterIt() async throws {
        let engine = try LocalEngine()
        let control = StopRequest()
        // The wait registers, then the stop comes: no task or sleep in between (a busy test run
        // may hold every thread of the pool for long).
        let waited = await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
            control.wait(60, on: engine) { done.resume(returning: $0) }
            control.stop(because: "the run's deadline (--deadline 1s) passed")
        }
        #expect(!waited, "a stopped wait ends without firing")
        let late = await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
            control.wait(0, on: engine) { done.resume(returning: $0) }
        }
        #expect(!late, "a wait that starts after the stop is cancelled at once")
        control.stop(because: "a second reason")
        #expect(control.stopReason == "the run's deadline (--deadline 1s) passed", "the first reason stands")
        #expect(control.isStopped)
        await engine.shutdown()
    }

    @Test func anUnstoppedWaitFires() async throws {
        let engine = try LocalEngine()
        let control = StopRequest()
        let fired = await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
            control.wait(0.01, on: engine) { done.resume(returning: $0) }
        }
        #expect(fired)
        #expect(!control.isStopped)
        await engine.shutdown()
    }

    @Test func aTransferSentAfterAStopEndsCancelledWithoutReachingTheEngine() async throws {
        // The local engine answers any transfer it starts with "no network transport".
        let engine = try LocalEngine()
        let control = StopRequest()
        let request = TransferRequest(url: "http://127.0.0.1:1/x", headers: [], deadline: Monotonic.now() + 60)
        let sent = await withCheckedContinuation { (done: CheckedContinuation<ExchangeReply, Never>) in
            control.send(request, handler: .statusOnly(url: request.url, deadline: request.deadline), on: engine) {
                done.resume(returning: $0)
            }
        }
        guard case .failure(let answered) = sent.result else {
            Issue.record("expected the engine's failure, got \(sent.result)")
            return
        }
        #expect(answered.reason == .io, "an unstopped transfer reaches the engine")
        control.stop(because: "the run's deadline passed")
        let late = await withCheckedContinuation { (done: CheckedContinuation<ExchangeReply, Never>) in
            control.send(request, handler: .statusOnly(url: request.url, deadline: request.deadline), on: engine) {
                done.resume(returning: $0)
            }
        }
        guard case .failure(let cancelled) = late.result else {
            Issue.record("expected cancelled, got \(late.result)")
            return
        }
        #expect(cancelled.reason == .cancelled && cancelled.message == "the run's deadline passed")
        await engine.shutdown()
    }

    @Test func maxRPSGivesEachOriginItsOwnSlotsOneIntervalApart() throws {
        let limits = try #require(RateLimits(bytesPerSecond: nil, requestsPerSecond: 4))
        // Three requests at once to one origin: 0, 0.25 and 0.5 s from now.
        #expect(limits.requestDelay(Origin.of("http://a"), now: 10) == 0)
        #expect(limits.requestDelay(Origin.of("http://a"), now: 10) == 0.25)
        #expect(limits.requestDelay(Origin.of("http://a"), now: 10) == 0.5)
        // Another origin has slots of its own.
        #expect(limits.requestDelay(Origin.of("http://b"), now: 10) == 0)
        // Once the slots are past, a request goes at once again.
        #expect(limits.requestDelay(Origin.of("http://a"), now: 20) == 0)
        #expect(RateLimits(bytesPerSecond: nil, requestsPerSecond: nil) == nil, "no limits, no pacing")
    }
}
