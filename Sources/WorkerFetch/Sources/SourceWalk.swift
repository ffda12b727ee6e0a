import WorkerSupport

/// A download's walk through its sources: each source that serves the request is asked in
/// order; a miss passes it to the next, a delivery or a failure ends it. Attempts and bytes add up
/// over the sources asked.
struct SourceWalk: Sendable {
    let sources: [any ContentSource]

    init(_ sources: [any ContentSource]) {
        self.sources = sources
    }

    /// Fetches `request`; `done` is called once. A stopped lane asks no source.
    func fetch(_ request: FetchRequest, lane: FetchLane, done: @escaping @Sendable (FetchResult) -> Void) {
        ask(from: 0, for: request, lane: lane, attempts: 0, bytes: 0, done: done)
    }

    private func ask(from number: Int, for request: FetchRequest, lane: FetchLane, attempts: Int, bytes: Int64,
                     done: @escaping @Sendable (FetchResult) -> Void) {
        guard let next = sources[number...].firstIndex(where: { $0.serves(request) }) else {
            // Every source that serves the URL missed (or none serves it).
            let failure = FetchFailure(.io, "no source has \(Redact.url(request.url))")
            done(FetchResult(result: .failure(failure), attempts: attempts, bytesReceived: bytes, source: nil))
            return
        }
        if lane.control.isStopped {
            let failure = FetchFailure(.cancelled, lane.control.stopReason)
            done(FetchResult(result: .failure(failure), attempts: max(attempts, 1), bytesReceived: bytes, source: nil))
            return
        }
        let source = sources[next]
        source.fetch(request, lane: lane) { outcome in
            let attempts = attempts + outcome.attempts
            let bytes = bytes + outcome.bytes
            switch outcome.answer {
            case .miss:
                ask(from: next + 1, for: request, lane: lane, attempts: attempts, bytes: bytes, done: done)
            case .delivered(let delivery):
                done(FetchResult(result: .success(delivery), attempts: attempts, bytesReceived: bytes, source: source.kind,
                                 servedBy: outcome.servedBy, failover: outcome.failover, isPrivate: outcome.isPrivate))
            case .failed(let failure):
                done(FetchResult(result: .failure(failure), attempts: attempts, bytesReceived: bytes, source: source.kind))
            }
        }
    }
}
