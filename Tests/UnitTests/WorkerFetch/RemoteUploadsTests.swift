import FoundationEssentials
import Glibc
import Logging
import Synchronization
import Testing
import WorkerStore
import WorkerTestSupport

@testable import WorkerFetch
@testable import WorkerSupport

/// The tier's upload queue with a scripted tier in place of the network: how many go at once,
/// HEAD before PUT for `push`, a stop, a tier that refuses. No sockets.
@Suite(.hangLimit) struct RemoteUploadsTests {
    /// A fetch engine whose transfers are answered by `answer` (method, URL) after `delay`
    /// seconds, on a LocalEngine's queue; it counts what is in flight and what each PUT sent.
    /// An abort ends a started transfer, and one not started yet when it starts (as CurlEngine).
    final class ScriptedTier: FetchEngine, @unchecked Sendable {
        // @unchecked: the counters are behind `state`.
        struct State {
            var inFlight = 0
            var mostInFlight = 0
            var requests: [String] = []
            var sent: [String: [UInt8]] = [:]
        }

        let inner: LocalEngine
        let state = Mutex(State())
        let delay: Double
        let answer: @Sendable (TransferMethod, String) -> Int

        init(delay: Double = 0.002, answer: @escaping @Sendable (TransferMethod, String) -> Int) throws {
            inner = try LocalEngine()
            self.delay = delay
            self.answer = answer
        }

        final class Transfer: EngineTransfer, @unchecked Sendable {
            let request: TransferRequest
            let done: @Sendable (ExchangeReply) -> Void
            let ended = Atomic<Bool>(false)
            /// Whether it started, and an abort that came first.
            let start = Mutex<(started: Bool, aborted: FetchFailure?)>((false, nil))
            init(_ request: TransferRequest, done: @escaping @Sendable (ExchangeReply) -> Void) {
                self.request = request
                self.done = done
            }
            func end(_ result: Result<ExchangeOutcome, FetchFailure>) {
                guard !ended.exchange(true, ordering: .acquiringAndReleasing) else { return }
                if case .put(let fd, _) = request.method { close(fd) }
                done(ExchangeReply(result: result, bytes: 0, multiplexed: false, closesConnection: false))
            }
        }

        var isCurrent: Bool { inner.isCurrent }
        func execute(_ work: @escaping @Sendable () -> Void) { inner.execute(work) }
        func newTimerID() -> Int { inner.newTimerID() }
        func schedule(_ id: Int, in seconds: Double, _ work: @escaping @Sendable (Bool) -> Void) { inner.schedule(id, in: seconds, work) }
        func cancelTimer(_ id: Int) { inner.cancelTimer(id) }

        func transfer(
            _ request: TransferRequest, handler: consuming sending ResponseHandler,
            done: @escaping @Sendable (ExchangeReply) -> Void
        ) -> any EngineTransfer {
            Transfer(
                request,
                done: { [self] reply in
                    self.state.withLock { $0.inFlight -= 1 }
                    done(reply)
                })
        }

        func start(_ transfer: any EngineTransfer) {
            guard let transfer = transfer as? Transfer else { return }
            let aborted = transfer.start.withLock { state -> FetchFailure? in
                state.started = true
                return state.aborted
            }
            if let failure = aborted {
                transfer.end(.failure(failure))
                return
            }
            let method = transfer.request.method
            let url = transfer.request.url
            state.withLock { state in
                state.inFlight += 1
                state.mostInFlight = max(state.mostInFlight, state.inFlight)
                state.requests.append("\(method == .head ? "HEAD" : "PUT") \(url)")
                if case .put(let fd, let size) = method {
                    var bytes = [UInt8](repeating: 0, count: Int(size))
                    _ = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, Int(size)) }
                    state.sent[url] = bytes
                }
            }
            let status = answer(method, url)
            inner.schedule(in: delay) { _ in transfer.end(.success(.status(status, retryAfter: nil))) }
        }

        func abort(_ transfer: any EngineTransfer, _ failure: FetchFailure) {
            guard let transfer = transfer as? Transfer else { return }
            let started = transfer.start.withLock { state -> Bool in
                if !state.started { state.aborted = failure }
                return state.started
            }
            if started { transfer.end(.failure(failure)) }
        }

        func shutdown() async { await inner.shutdown() }
    }

    private func settings(uploadsAtOnce: Int = 3) throws -> RemoteCacheSettings {
        var settings = try RemoteCacheSettings.make(url: "http://tier.test/team", headers: [], environment: [:]).get()
        settings.uploadsAtOnce = uploadsAtOnce
        return settings
    }

    /// `count` objects installed in the cache at `directory`, as a run's commit installs them.
    private func bodies(_ count: Int, in directory: TemporaryDirectory) -> [PendingUpload] {
        (0..<count).map { number in
            let bytes = Array("body \(number)".utf8)
            let hex = String(repeating: String(number % 10), count: 64)
            directory.write("objects/sha256/\(hex.prefix(2))/\(hex)", bytes)
            return PendingUpload(sha256: hex, size: Int64(bytes.count))
        }
    }

    @Test func everyBodyIsSentAFewAtATimeAndTheRunWaitsForThem() async throws {
        let directory = TemporaryDirectory()
        let engine = try ScriptedTier { _, _ in 201 }
        let tier = RemoteTier(settings: try settings(uploadsAtOnce: 3), logger: Logger(label: "test"))
        let uploads = RemoteUploads(tier: tier, cacheDirectory: directory.path, engines: [engine], entryTimeout: 60)
        let pending = bodies(10, in: directory)
        for body in pending { uploads.offer(body) }
        uploads.closeOffers()
        await uploads.finished()
        let state = engine.state.withLock { $0 }
        #expect(state.requests.count == 10 && state.requests.allSatisfy { $0.hasPrefix("PUT http://tier.test/team/cas/") })
        #expect(state.mostInFlight <= 3, "at most uploadsAtOnce in flight: \(state.mostInFlight)")
        #expect(state.mostInFlight >= 2, "more than one at once")
        #expect(state.sent["http://tier.test/team/cas/" + pending[4].sha256] == Array("body 4".utf8))
        let summary = tier.summary
        #expect(summary.uploads == 10 && summary.uploadErrors == 0 && summary.bytesUp == pending.reduce(0) { $0 + $1.size })
        await engine.shutdown()
    }

    private func row(_ object: String, size: Int64) -> IndexRecord {
        IndexRecord(
            url: "https://origin.test/" + object.prefix(8), hash: "sha256:" + object, object: object, size: size,
            fetchedAt: 0, lastUsed: 0)
    }

    @Test func onlyPromisedObjectsACommitInstalledAreSentAndTheRunWaitsUntilTheOffersClose() async throws {
        let directory = TemporaryDirectory()
        let engine = try ScriptedTier { _, _ in 201 }
        let tier = RemoteTier(settings: try settings(), logger: Logger(label: "test"))
        let uploads = RemoteUploads(tier: tier, cacheDirectory: directory.path, engines: [engine], entryTimeout: 60)
        let installed = String(repeating: "ab", count: 32), notInstalled = String(repeating: "cd", count: 32)
        let notPromised = String(repeating: "ef", count: 32)
        directory.write("objects/sha256/ab/" + installed, Array("installed".utf8))
        directory.write("objects/sha256/ef/" + notPromised, Array("local".utf8))
        // A body still in tmp/ (its batch did not commit): never read from there.
        directory.write("tmp/" + notInstalled, Array("in tmp".utf8))
        uploads.promise(installed)
        uploads.promise(notInstalled)
        // A commit installed the first and one the tier was never promised (a local file's, a tier hit).
        uploads.installed([row(installed, size: 9), row(notPromised, size: 5)])
        // The uploads have ended, but more offers may come until they are closed.
        let waiting = Task { await uploads.finished() }
        let end = Monotonic.now() + 30
        while engine.state.withLock({ $0.requests.count }) < 1, Monotonic.now() < end { usleep(1000) }
        // Installed again without a new promise: not sent again; promised again: sent again.
        uploads.installed([row(installed, size: 9)])
        uploads.promise(installed)
        uploads.installed([row(installed, size: 9)])
        uploads.closeOffers()
        await waiting.value
        let state = engine.state.withLock { $0 }
        #expect(state.sent["http://tier.test/team/cas/" + installed] == Array("installed".utf8))
        #expect(state.requests.count == 2, "the installed object twice (promised twice), the others never: \(state.requests)")
        #expect(tier.summary.uploads == 2)
        await engine.shutdown()
    }

    @Test func pushAsksFirstAndSendsOnlyWhatTheTierLacks() async throws {
        let directory = TemporaryDirectory()
        // Objects whose name starts with an even digit are there already.
        let engine = try ScriptedTier { method, url in
            guard method == .head else { return 201 }
            return Int(String(url.last!))! % 2 == 0 ? 200 : 404
        }
        let tier = RemoteTier(settings: try settings(), logger: Logger(label: "test"))
        let uploads = RemoteUploads(tier: tier, cacheDirectory: directory.path, engines: [engine], entryTimeout: 60)
        for var body in bodies(6, in: directory) {
            body.checksFirst = true
            uploads.offer(body)
        }
        uploads.closeOffers()
        await uploads.finished()
        let requests = engine.state.withLock { $0.requests }
        #expect(requests.filter { $0.hasPrefix("HEAD") }.count == 6)
        #expect(requests.filter { $0.hasPrefix("PUT") }.count == 3)
        #expect(tier.summary.present == 3 && tier.summary.uploads == 3)
        await engine.shutdown()
    }

    @Test func aStopCutsWhatIsInFlightAndDropsTheRestAsNotDone() async throws {
        let directory = TemporaryDirectory()
        let engine = try ScriptedTier(delay: 30) { _, _ in 201 }
        let tier = RemoteTier(settings: try settings(uploadsAtOnce: 2), logger: Logger(label: "test"))
        let uploads = RemoteUploads(tier: tier, cacheDirectory: directory.path, engines: [engine], entryTimeout: 60)
        for body in bodies(5, in: directory) { uploads.offer(body) }
        // Both in flight have reached the tier (they are answered only after 30 s).
        let end = Monotonic.now() + 30
        while engine.state.withLock({ $0.requests.count }) < 2, Monotonic.now() < end { usleep(1000) }
        #expect(engine.state.withLock { $0.requests.count } == 2)
        uploads.stop(because: "the run's deadline passed")
        await uploads.finished()
        let summary = tier.summary
        #expect(summary.uploadsNotDone == 5 && summary.uploads == 0, "\(summary)")
        uploads.offer(bodies(1, in: directory)[0])
        #expect(tier.summary.uploadsNotDone == 6, "an offer after the stop is not sent")
        #expect(engine.state.withLock { $0.requests.count } == 2)
        await engine.shutdown()
    }

    @Test func aTierThatRefusesUploadsIsGivenUpAndTheRestAreNotSent() async throws {
        let directory = TemporaryDirectory()
        let engine = try ScriptedTier { _, _ in 507 }
        let tier = RemoteTier(settings: try settings(uploadsAtOnce: 1), logger: Logger(label: "test"))
        let uploads = RemoteUploads(tier: tier, cacheDirectory: directory.path, engines: [engine], entryTimeout: 60)
        for body in bodies(8, in: directory) { uploads.offer(body) }
        uploads.closeOffers()
        await uploads.finished()
        // One at a time, each tried once more (a 5xx is transient): the third error gives it up.
        #expect(engine.state.withLock { $0.requests.count } == 6, "one at a time, each retried once: the third error gives it up")
        #expect(tier.summary.uploadErrors == 3 && tier.summary.givenUp == "upload: HTTP 507")
        #expect(!tier.isUsable)
        await engine.shutdown()
    }
}
