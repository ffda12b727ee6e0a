import FoundationEssentials
import Synchronization
import WorkerManifest
import WorkerStore
import WorkerSupport

/// The shared tier (`--remote-cache`), asked before the origin for an entry pinned by SHA-256:
/// `GET {base}/cas/{hex}` with the tier's own headers (never the manifest's). A body is verified
/// like any other; 404 and redirects are misses; a body that fails its hash or is cut is
/// discarded and counted; an error (refused, timeout, another status) counts towards giving the
/// tier up. Whatever the tier does, the entry goes on to the origin: the tier never fails it.
/// A body the origin then delivers is uploaded once the run's commit has installed it
/// (`FetchResult.uploadsToTier`, `RemoteUploads`).
final class RemoteCacheSource: ContentSource {
    let tier: RemoteTier
    let store: ContentStore
    let settings: FetchSettings
    let meter: TransferMeter
    /// Where bodies the origin delivered go (nil: read-only).
    let uploads: RemoteUploads?

    init(tier: RemoteTier, store: ContentStore, settings: FetchSettings, meter: TransferMeter, uploads: RemoteUploads?) {
        self.tier = tier
        self.store = store
        self.settings = settings
        self.meter = meter
        self.uploads = uploads
    }

    var kind: SourceKind { .remote }

    /// Entries pinned by SHA-256 on an origin: objects are named by it. (Other algorithms, and
    /// entries without a hash, cannot be looked up; with `uploadsUnpinned`, entries without a
    /// hash pass through without a request, so that what the origin delivers is uploaded.)
    func serves(_ request: FetchRequest) -> Bool {
        guard request.origin != nil else { return false }
        return request.expected?.algorithm == .sha256 || (request.expected == nil && tier.settings.uploadsUnpinned)
    }

    func fetch(_ request: FetchRequest, lane: FetchLane, done: @escaping @Sendable (SourceOutcome) -> Void) {
        guard let expected = request.expected else {
            done(SourceOutcome(answer: .miss, attempts: 0, bytes: 0))
            return
        }
        guard tier.isUsable else {
            tier.count { $0.skipped += 1 }
            done(SourceOutcome(answer: .miss, attempts: 0, bytes: 0))
            return
        }
        let url = tier.settings.objectURL(expected.hex)
        let started = Monotonic.now()
        let limit = min(settings.entryTimeout, tier.settings.lookupDeadline)
        let deadline = started + limit
        let handler = ResponseHandler(store: store, expected: expected, maxSize: settings.maxSize, conditional: false,
                                      deadline: deadline, entryTimeout: limit, url: url, resume: nil,
                                      resumeThreshold: .max)
        // The meter is told under the entry's origin: its window grows with the tier's answers,
        // which say nothing of the origin's protocol.
        var sent = TransferRequest(url: url, headers: tier.settings.headers, deadline: deadline, meter: meter,
                                   origin: request.origin)
        sent.timeouts = tier.settings.timeouts
        sent.learnsProtocol = false
        lane.control.send(sent, handler: handler, on: lane.engine) { [self] reply in
            let now = Monotonic.now()
            let outcome = Self.outcome(of: reply, tier: tier, seconds: now - started)
            if case .miss = outcome.answer { self.missedAt.withLock { $0[request.url] = now } }
            done(outcome)
        }
    }

    /// When each entry the tier missed went on to the origin: how long the origin took is what
    /// the tier's pace is compared with.
    private let missedAt = Mutex<[String: Double]>([:])

    /// What a tier answer means for the entry; every answer but a stop passes it to the origin.
    static func outcome(of reply: ExchangeReply, tier: RemoteTier, seconds: Double = 0) -> SourceOutcome {
        let miss = SourceOutcome(answer: .miss, attempts: 0, bytes: 0)
        switch reply.result {
        case .success(.body(let file, _, _)):
            tier.answered {
                $0.hits += 1
                $0.bytesDown += reply.bytes
            }
            tier.paced(.tier, bytes: file.size, seconds: seconds)
            let body = FetchedBody(temporaryPath: file.path, sha256: file.sha256, size: file.size, etag: nil, lastModified: nil)
            return SourceOutcome(answer: .delivered(.body(body)), attempts: 1, bytes: reply.bytes)
        case .success(.status(404, _)), .success(.redirect):
            tier.answered { $0.misses += 1 }
            return miss
        case .success(.status(let status, _)):
            tier.failed("HTTP \(status)") { $0.errors += 1 }
            return miss
        case .success(.notModified):
            tier.failed("an unasked 304") { $0.errors += 1 }
            return miss
        case .failure(let failure) where failure.reason == .cancelled:
            return SourceOutcome(answer: .failed(failure), attempts: 0, bytes: reply.bytes)
        case .failure(let failure):
            // A body that arrived and is not the content (wrong bytes, an HTML page, cut short,
            // too large) was discarded by the handler; a failure before any body is an error.
            let corrupt = failure.reason == .hashMismatch || failure.reason == .tooLarge || reply.bytes > 0
            tier.failed(failure.message) {
                if corrupt { $0.corrupt += 1 } else { $0.errors += 1 }
                $0.bytesDown += reply.bytes
            }
            return miss
        }
    }

    /// The origin delivered what the tier missed: the tier takes it once installed (unless
    /// read-only, or given up, or the body was fetched with credentials and the tier is not
    /// as private as the origins).
    func missed(_ request: FetchRequest, deliveredBy kind: SourceKind, _ body: FetchedBody) -> Bool {
        let missed = missedAt.withLock { $0.removeValue(forKey: request.url) }
        guard kind == .origin else { return false }
        if let missed { tier.paced(.origin, bytes: body.size, seconds: Monotonic.now() - missed) }
        guard uploads != nil, tier.isUsable else { return false }
        guard !request.carriesCredentials || tier.settings.uploadsPrivate else {
            tier.count { $0.privateNotUploaded += 1 }
            return false
        }
        return true
    }
}
