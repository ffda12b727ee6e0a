import Logging
import Synchronization
import Testing
import WorkerTestSupport

@testable import CurlTransport
@testable import WorkerFetch
@testable import WorkerStore
@testable import WorkerSupport

/// The engines' contract without a transfer, for libcurl's and the local one alike: what runs
/// where, and what a cancel or a shutdown does to a timer.
@Suite(.hangLimit) struct CurlEngineTests {
    enum Kind: CaseIterable, Sendable {
        case curl, local
    }

    private func engine(_ kind: Kind = .curl) throws -> any FetchEngine {
        switch kind {
        case .curl:
            try CurlEngine(
                options: .init(
                    connectTimeout: 1, readTimeout: 1, connectionsPerHost: 1, streamsPerConnection: 1,
                    trustedCertificates: nil))
        case .local:
            try LocalEngine()
        }
    }

    @Test(arguments: Kind.allCases) func workRunsOnTheEngineThreadInTheOrderItWasQueued(kind: Kind) async throws {
        let engine = try engine(kind)
        let seen = Mutex<[Int]>([])
        let onEngine = Mutex(true)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            for number in 0..<100 {
                engine.execute {
                    if !engine.isCurrent { onEngine.withLock { $0 = false } }
                    seen.withLock { $0.append(number) }
                    if number == 99 { done.resume() }
                }
            }
        }
        #expect(seen.withLock { $0 } == Array(0..<100))
        #expect(onEngine.withLock { $0 })
        #expect(!engine.isCurrent, "the test's own thread is not the engine's")
        await engine.shutdown()
    }

    /// Each engine knows its own thread: on one engine's thread the other engine (of either kind)
    /// is not current, and each is current on its own.
    @Test(arguments: Kind.allCases) func oneEnginesThreadIsNotAnothers(kind: Kind) async throws {
        let first = try engine(kind)
        let second = try engine(kind)
        let seen = await withCheckedContinuation { (done: CheckedContinuation<[Bool], Never>) in
            first.execute {
                let onFirst = [first.isCurrent, second.isCurrent]
                second.execute { done.resume(returning: onFirst + [second.isCurrent, first.isCurrent]) }
            }
        }
        #expect(seen == [true, false, true, false])
        await first.shutdown()
        await second.shutdown()
    }

    /// What only the engine's thread may touch is checked there, not promised: read on the
    /// engine's thread it is there, read from another thread the process traps.
    @Test func engineStateIsReadOnItsThreadAndTrapsElsewhere() async throws {
        let engine = try CurlEngine(
            options: .init(
                connectTimeout: 1, readTimeout: 1, connectionsPerHost: 1, streamsPerConnection: 1,
                trustedCertificates: nil))
        let transfers = await withCheckedContinuation { (done: CheckedContinuation<Int, Never>) in
            engine.execute { done.resume(returning: engine.loop.value.transfers.count) }
        }
        #expect(transfers == 0)
        await engine.shutdown()
        await #expect(processExitsWith: .failure) {
            let engine = try CurlEngine(
                options: .init(
                    connectTimeout: 1, readTimeout: 1, connectionsPerHost: 1,
                    streamsPerConnection: 1, trustedCertificates: nil))
            _ = engine.loop.value.transfers.count
        }
    }

    @Test(arguments: Kind.allCases) func aTimerFiresAfterItsDelay(kind: Kind) async throws {
        let engine = try engine(kind)
        let start = Monotonic.now()
        let (fired, at) = await withCheckedContinuation { (done: CheckedContinuation<(Bool, Double), Never>) in
            engine.schedule(in: 0.05) { done.resume(returning: ($0, Monotonic.now())) }
        }
        #expect(fired)
        #expect(at - start >= 0.05)
        await engine.shutdown()
    }

    @Test(arguments: Kind.allCases) func aTimerCancelledBeforeItIsScheduledEndsAsCancelledAtOnce(kind: Kind) async throws {
        let engine = try engine(kind)
        let id = engine.newTimerID()
        engine.cancelTimer(id)
        let start = Monotonic.now()
        // The time is taken on the engine's thread: the test's own task may wait for a thread.
        let (fired, at) = await withCheckedContinuation { (done: CheckedContinuation<(Bool, Double), Never>) in
            engine.schedule(id, in: 30) { done.resume(returning: ($0, Monotonic.now())) }
        }
        #expect(!fired)
        #expect(at - start < 5, "not after its delay")
        await engine.shutdown()
    }

    @Test(arguments: Kind.allCases) func shutdownEndsPendingTimersAsCancelled(kind: Kind) async throws {
        let engine = try engine(kind)
        let outcomes = Mutex<[Bool]>([])
        engine.schedule(in: 60) { fired in outcomes.withLock { $0.append(fired) } }
        let id = engine.schedule(in: 60) { fired in outcomes.withLock { $0.append(fired) } }
        engine.cancelTimer(id)
        await engine.shutdown()
        #expect(outcomes.withLock { $0 } == [false, false])
        let after = await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
            engine.schedule(in: 0) { done.resume(returning: $0) }
        }
        #expect(!after, "a timer after the shutdown ends as cancelled")
    }

    @Test func anAbortThatArrivesBeforeItsTransferEndsItWithoutARequest() async throws {
        let directory = TemporaryDirectory()
        let store = try ContentStore(root: directory.path + "/cache")
        let engine = try engine()
        let deadline = Monotonic.now() + 60
        let outcome = await withCheckedContinuation { (done: CheckedContinuation<ExchangeReply, Never>) in
            let handler = ResponseHandler(
                store: store, expected: nil, maxSize: 1 << 20, conditional: false,
                deadline: deadline, entryTimeout: 60, url: "http://127.0.0.1:9/x", resume: nil,
                resumeThreshold: 1 << 20)
            let transfer = engine.transfer(
                TransferRequest(url: "http://127.0.0.1:9/x", headers: [], deadline: deadline),
                handler: handler
            ) { outcome in
                done.resume(returning: outcome)
            }
            // A stop racing a start: the abort is queued first.
            engine.abort(transfer, FetchFailure(.cancelled, "stopped"))
            engine.start(transfer)
        }
        guard case .failure(let failure) = outcome.result else {
            Issue.record("the transfer ran")
            return
        }
        #expect(failure.reason == .cancelled && failure.message == "stopped")
        #expect(outcome.bytes == 0)
        await engine.shutdown()
    }

    @Test func newDownloadsGoToTheEngineWithTheFewestAndAFreedSlotStaysOnItsEngine() async throws {
        let directory = TemporaryDirectory()
        let store = try ContentStore(root: directory.path + "/cache")
        var settings = FetchSettings()
        settings.transport = CurlTransport()
        let fetcher = try Fetcher(store: store, settings: settings, logger: Logger(label: "test"), engineCount: 2)
        let (first, second) = (fetcher.engines[0], fetcher.engines[1])
        // From a thread that is no engine's: the one with the fewest, the first on a tie.
        #expect(fetcher.engineForNext() === first)
        #expect(fetcher.engineForNext() === second)
        #expect(fetcher.engineForNext() === first)
        // On an engine's own thread a tie keeps the work there, with no hand-off.
        fetcher.finished(on: first)
        let chosen = await withCheckedContinuation { (done: CheckedContinuation<any FetchEngine, Never>) in
            second.execute { done.resume(returning: fetcher.engineForNext()) }
        }
        #expect(chosen === second)
        fetcher.finished(on: first)
        #expect(fetcher.engineForNext() === first, "fewer downloads wins over the caller's engine")
        await fetcher.shutdown()
    }
}
