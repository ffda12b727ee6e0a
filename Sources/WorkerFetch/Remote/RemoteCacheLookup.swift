import FoundationEssentials
import WorkerManifest
import WorkerStore
import WorkerSupport

/// The shared tier (`--remote-cache`) as a cache beside the sources, not one of them (Nuke asks
/// its `DataCaching` before its `DataLoading` and stores after): an entry pinned by SHA-256 is
/// looked up there before any source is asked, with an admission of its own (`DownloadSchedule`'s
/// tier lookups), as `GET {base}/cas/{hex}` with the tier's own headers (never the manifest's). A
/// body is verified like any other; 404 and redirects are misses; a body that fails its hash or
/// is cut is discarded and counted; an error (refused, timeout, another status) counts towards
/// giving the tier up. Whatever the tier does, a miss goes on to the sources: the tier never fails
/// an entry, and its answers never touch an origin's window. A body the origin then delivers is
/// promised to the uploads (`originDelivered`) and sent once a commit has installed it
/// (`RemoteUploads` observes the commits).
final class RemoteCacheLookup: Sendable {
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

    /// Whether the tier is asked for `request` before its sources: entries pinned by SHA-256 on an
    /// origin (objects are named by it; other algorithms cannot be looked up).
    func asks(_ request: FetchRequest) -> Bool {
        request.origin != nil && request.expected?.algorithm == .sha256
    }

    /// Asks the tier for `request`'s content, on `engine`'s thread: a verified body waiting in
    /// `tmp/`, a miss (also for a tier given up: no request then), or a stop's `cancelled`.
    func lookUp(
        _ request: FetchRequest, control: StopRequest, on engine: any FetchEngine,
        done: @escaping @Sendable (SourceOutcome) -> Void
    ) {
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
        let handler = ResponseHandler(
            store: store, expected: expected, maxSize: settings.maxSize, conditional: false,
            deadline: deadline, entryTimeout: limit, url: url, resume: nil,
            resumeThreshold: .max)
        // Metered for the bytes it brings (progress), under no origin: no origin's window hears it.
        var sent = TransferRequest(url: url, headers: tier.settings.headers, deadline: deadline, meter: meter)
        sent.timeouts = tier.settings.timeouts
        control.send(sent, handler: handler, on: engine) { [tier] reply in
            done(Self.outcome(of: reply, tier: tier, seconds: Monotonic.now() - started))
        }
    }

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
        case .success(.notModified), .success(.statusAndHeader):
            tier.failed("an answer it was not asked for") { $0.errors += 1 }
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

    /// What the origin delivered for `request` in `seconds`: its pace is noted against the
    /// tier's, and the body promised to the uploads when the tier takes it (`takes`).
    func originDelivered(_ request: FetchRequest, _ body: FetchedBody, isPrivate: Bool, seconds: Double) {
        if takes(request, deliveredBy: .origin, body, isPrivate: isPrivate, seconds: seconds) { uploads?.promise(body.sha256) }
    }

    /// Whether the tier takes `body`, which source `kind` delivered for `request` in `seconds`,
    /// once the commit has installed it: what the origin delivered of an entry the tier is asked
    /// for (or of one without a hash, with `uploadsUnpinned`: `manifest --urls`), unless the tier
    /// is read-only or was given up, or the body is private (fetched with credentials from the
    /// location that delivered it) and the tier is not declared as private as the origins. The
    /// origin's pace is noted against the tier's.
    func takes(
        _ request: FetchRequest, deliveredBy kind: SourceKind, _ body: FetchedBody, isPrivate: Bool,
        seconds: Double
    ) -> Bool {
        guard kind == .origin else { return false }
        if asks(request) { tier.paced(.origin, bytes: body.size, seconds: seconds) }
        guard asks(request) || (request.origin != nil && request.expected == nil && tier.settings.uploadsUnpinned) else { return false }
        guard uploads != nil, tier.isUsable else { return false }
        guard !isPrivate || tier.settings.uploadsPrivate else {
            tier.count { $0.privateNotUploaded += 1 }
            return false
        }
        return true
    }
}
