import FoundationEssentials
import Glibc
import Synchronization
import WorkerStore
import WorkerSupport

/// Objects the tier missed, `PUT` to `{base}/cas/{hex}` beside the downloads once their batch's
/// commit installed them: a queue, a few uploads in flight at once (`uploadsAtOnce`) on the run's
/// engines. An upload reads the installed object only (never `tmp/`, where a body may still be
/// discarded). The run closes the offers after its last commit and waits for the uploads
/// (`finished`); a stop (deadline, signal) drops what is queued and cuts what is in flight, and
/// both are counted as not done.
public final class RemoteUploads: Sendable, InstallObserver {
    typealias Collections = RemoteUploadQueue.Collections

    private let tier: RemoteTier
    /// The cache whose objects are sent.
    private let cacheDirectory: String
    private let engines: [any FetchEngine]
    private let entryTimeout: Double
    private let control = StopRequest()
    private let state = Mutex(RemoteUploadQueue())

    public init(tier: RemoteTier, cacheDirectory: String, engines: [any FetchEngine], entryTimeout: Double) {
        self.tier = tier
        self.cacheDirectory = cacheDirectory
        self.engines = engines
        self.entryTimeout = entryTimeout
    }

    /// The tier takes `sha256` once a commit installs it (what it missed, the origin delivered).
    func promise(_ sha256: String) {
        state.withLock { _ = $0.promised.insert(sha256) }
    }

    /// A commit installed these rows: the objects promised are queued (the uploads observe the
    /// run's commits; `BatchCommit.observer`).
    public func installed(_ rows: [IndexRecord]) {
        let due = state.withLock { state in rows.filter { state.promised.remove($0.object) != nil } }
        for row in due { offer(PendingUpload(sha256: row.object, size: row.size)) }
    }

    public func offer(_ pending: PendingUpload) {
        let accepted = state.withLock { state in
            guard !state.stopped else { return false }
            state.queue.append(pending)
            return true
        }
        if accepted { pump() } else { tier.count { $0.uploadsNotDone += 1 } }
    }

    /// No more offers come: `finished` returns once those made have ended.
    public func closeOffers() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = false
            guard state.inFlight == 0, state.waiting == 0 || state.stopped else { return [] }
            defer { state.idle.removeAll() }
            return state.idle
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once the offers are closed (or the uploads stopped) and every upload offered has
    /// ended (or was dropped by `stop`).
    public func finished() async {
        await withCheckedContinuation { continuation in
            let idle = state.withLock { state in
                guard state.inFlight > 0 || (state.waiting > 0 || state.open) && !state.stopped else { return true }
                state.idle.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }

    /// Drops what is queued and cuts what is in flight (each counted as not done).
    public func stop(because reason: String) {
        let (dropped, waiters) = state.withLock { state in
            let dropped = state.stopped ? 0 : state.waiting
            state.stopped = true
            state.queue.removeAll()
            state.next = 0
            let waiters = state.inFlight == 0 ? state.idle : []
            if state.inFlight == 0 { state.idle.removeAll() }
            return (dropped, waiters)
        }
        if dropped > 0 { tier.count { $0.uploadsNotDone += dropped } }
        control.stop(because: reason)
        for waiter in waiters { waiter.resume() }
    }

    private func pump() {
        let started = state.withLock { $0.startable(limit: tier.settings.uploadsAtOnce, engines: engines.count) }
        for (pending, number) in started {
            let engine = engines[number]
            engine.execute { self.put(pending, on: engine, number: number) }
        }
    }

    /// One upload ended: the next ones start; the last one wakes `finished`.
    private func ended() {
        state.withLock { $0.inFlight -= 1 }
        pump()
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard state.inFlight == 0, !state.open && state.waiting == 0 || state.stopped else { return [] }
            defer { state.idle.removeAll() }
            return state.idle
        }
        for waiter in waiters { waiter.resume() }
    }

    private func put(_ pending: PendingUpload, on engine: any FetchEngine, number: Int) {
        // Queued before the tier was given up: dropped (the report's `given_up` says why).
        guard tier.isUsable else { return ended() }
        if pending.checksFirst {
            send(.head, for: pending, on: engine) { [self] reply in
                switch reply.result {
                case .success(.status(200, _)):
                    tier.count { $0.present += 1 }
                    ended()
                case .success(.status(404, _)):
                    var rest = pending
                    rest.checksFirst = false
                    put(rest, on: engine, number: number)
                default:
                    if retry(pending, after: reply, on: engine, number: number) { return }
                    record(reply, pending)
                    ended()
                }
            }
            return
        }
        // Installed by its batch's commit (gone: removed since, by gc or another run's repair,
        // and there is nothing to send).
        let fd = open(CacheLayout.objectPath(cacheDirectory, pending.sha256), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return ended() }
        send(.put(fd: fd, size: pending.size), for: pending, on: engine) { [self] reply in
            if case .success(.status(let status, _)) = reply.result, status == 404 || status == 409, !pending.afterCollections {
                return collectionsMissing(for: pending, number: number)
            }
            if retry(pending, after: reply, on: engine, number: number) { return }
            record(reply, pending)
            ended()
        }
    }

    /// How long an upload waits before its one retry.
    static let retryPause = 0.5

    /// Sends `pending` once more after a pause when `reply` is a transient failure (refused,
    /// reset, timed out, 5xx, 408, 429, or 423 Locked: another client is storing that very
    /// object) and it has not been retried yet; whether it will be.
    private func retry(_ pending: PendingUpload, after reply: ExchangeReply, on engine: any FetchEngine, number: Int) -> Bool {
        guard !pending.retried, Self.isTransient(reply) else { return false }
        var next = pending
        next.retried = true
        let again = next
        engine.schedule(in: Self.retryPause) { [self] fired in
            guard fired, tier.isUsable else {
                // The engine stopped (or the tier was given up) meanwhile.
                tier.count { $0.uploadsNotDone += 1 }
                return ended()
            }
            put(again, on: engine, number: number)
        }
        return true
    }

    static func isTransient(_ reply: ExchangeReply) -> Bool {
        switch reply.result {
        case .success(.status(let status, _)): status >= 500 || status == 408 || status == 423 || status == 429
        case .success: false
        case .failure(let failure): failure.reason != .cancelled && failure.isTransient
        }
    }

    /// A PUT refused as if a collection were missing: the first makes them, the others wait.
    private func collectionsMissing(for pending: PendingUpload, number: Int) {
        var retry = pending
        retry.afterCollections = true
        enum Next { case make, wait, again, fail(String) }
        let next = state.withLock { state -> Next in
            switch state.collections {
            case .unknown:
                state.collections = .making(waiting: [(retry, number)])
                return .make
            case .making(var waiting):
                waiting.append((retry, number))
                state.collections = .making(waiting: waiting)
                return .wait
            case .made:
                // Sent before they were made.
                return .again
            case .failed(let problem):
                return .fail(problem)
            }
        }
        switch next {
        case .make: makeCollections(tier.settings.collectionURLs[...], on: engines[number])
        case .wait: return
        case .again: put(retry, on: engines[number], number: number)
        case .fail(let problem):
            tier.failed("upload: \(problem)") { $0.uploadErrors += 1 }
            ended()
        }
    }

    /// MKCOL each of `urls`, top first (201 made, 405 there already), then the waiting uploads.
    private func makeCollections(_ urls: ArraySlice<String>, on engine: any FetchEngine) {
        guard let url = urls.first else { return collectionsDone(nil) }
        let deadline = Monotonic.now() + entryTimeout
        var request = TransferRequest(url: url, headers: tier.settings.headers, deadline: deadline)
        request.method = .makeCollection
        request.timeouts = tier.settings.timeouts
        control.send(request, handler: .statusOnly(url: url, deadline: deadline), on: engine) { [self] reply in
            switch reply.result {
            case .success(.status(let status, _)) where (200..<300).contains(status) || status == 405:
                makeCollections(urls.dropFirst(), on: engine)
            case .success(.status(let status, _)):
                collectionsDone("MKCOL \(Redact.url(url)): HTTP \(status)")
            case .success:
                collectionsDone("MKCOL \(Redact.url(url)): an unexpected answer")
            case .failure(let failure):
                collectionsDone("MKCOL \(Redact.url(url)): \(failure.message)")
            }
        }
    }

    private func collectionsDone(_ problem: String?) {
        let waiting = state.withLock { state -> [(PendingUpload, Int)] in
            guard case .making(let waiting) = state.collections else { return [] }
            state.collections = problem.map { .failed($0) } ?? .made
            return waiting
        }
        for (pending, number) in waiting {
            if let problem {
                tier.failed("upload: \(problem)") { $0.uploadErrors += 1 }
                ended()
            } else {
                let engine = engines[number]
                engine.execute { self.put(pending, on: engine, number: number) }
            }
        }
    }

    /// One request to the tier for `pending`'s object, cancelled by a stop.
    private func send(
        _ method: TransferMethod, for pending: PendingUpload, on engine: any FetchEngine,
        then: @escaping @Sendable (ExchangeReply) -> Void
    ) {
        let url = tier.settings.objectURL(pending.sha256)
        let deadline = Monotonic.now() + entryTimeout
        var request = TransferRequest(url: url, headers: tier.settings.headers, deadline: deadline)
        request.method = method
        request.timeouts = tier.settings.timeouts
        // After a stop the reply is a `cancelled` one: counted as not done.
        control.send(request, handler: .statusOnly(url: url, deadline: deadline), on: engine, done: then)
    }

    private func record(_ reply: ExchangeReply, _ pending: PendingUpload) {
        switch reply.result {
        case .success(.status(let status, _)) where (200..<300).contains(status):
            // Counted, not taken as health: an upload that succeeds says nothing of how the
            // tier answers lookups (a tier that drips its bodies still takes PUTs).
            tier.count {
                $0.uploads += 1
                $0.bytesUp += pending.size
            }
        case .success(.status(423, _)):
            // Locked again after the retry: on a content-addressed PUT, another client is
            // storing these very bytes.
            tier.count { $0.present += 1 }
        case .success(.status(let status, _)):
            // (A HEAD's error status comes here too: nothing was sent.)
            tier.uploadFailed(pending.sha256, "HTTP \(status)")
        case .success:
            tier.uploadFailed(pending.sha256, "an unexpected answer")
        case .failure(let failure) where failure.reason == .cancelled:
            tier.count { $0.uploadsNotDone += 1 }
        case .failure(let failure):
            tier.uploadFailed(pending.sha256, failure.message)
        }
    }
}
