import Logging
import Synchronization

/// A run's shared tier: its settings, its health (`RemoteTierHealth`) and what it did, shared by
/// the lookups (`RemoteCacheLookup`) and the uploads (`RemoteUploads`) on every engine's thread.
public final class RemoteTier: Sendable {
    let settings: RemoteCacheSettings
    private let logger: Logger
    private let state: Mutex<State>

    private struct State {
        var health: RemoteTierHealth
        var counts: RemoteTierCounts
        var pace = RemoteTierPace()
    }

    public init(settings: RemoteCacheSettings, logger: Logger) {
        self.settings = settings
        self.logger = logger
        state = Mutex(
            State(
                health: RemoteTierHealth(limit: settings.errorsToGiveUp),
                counts: RemoteTierCounts(url: settings.shownURL, readOnly: settings.readOnly)))
    }

    var isUsable: Bool { state.withLock { $0.health.isUsable } }

    /// What the run's tier did so far: the report's `remote_cache` object.
    public var summary: RemoteTierCounts { state.withLock { $0.counts } }

    /// Counts what does not tell of the tier's health (an upload dropped, a lookup skipped).
    func count(_ count: (inout RemoteTierCounts) -> Void) {
        state.withLock { count(&$0.counts) }
    }

    /// A body the tier (or, after the tier missed, the origin) delivered, and how long it took:
    /// a tier clearly slower than the origin is given up (`RemoteTierPace`).
    func paced(_ side: RemoteTierPace.Side, bytes: Int64, seconds: Double) {
        let why = state.withLock { state -> String? in
            guard state.health.isUsable, let why = state.pace.add(side, bytes: bytes, seconds: seconds) else { return nil }
            state.health.giveUp(why)
            state.counts.givenUp = why
            return why
        }
        if let why {
            logger.warning("remote cache \(settings.shownURL) is given up for the rest of this run: \(why); the run goes on without it")
        }
    }

    /// Counts a lookup's answer (a hit or a miss) and clears the errors in a row.
    func answered(_ count: (inout RemoteTierCounts) -> Void) {
        state.withLock { state in
            count(&state.counts)
            state.health.answered()
        }
    }

    /// An upload of `object` that failed (after its retry): said as a warning with its reason,
    /// and counted as an error.
    func uploadFailed(_ object: String, _ why: String) {
        logger.warning("remote cache \(settings.shownURL): the upload of sha256:\(object) failed: \(why)")
        failed("upload: \(why)") { $0.uploadErrors += 1 }
    }

    /// Counts an error; the one that gives the tier up is told once, as a warning.
    func failed(_ why: String, _ count: (inout RemoteTierCounts) -> Void) {
        let opened = state.withLock { state in
            count(&state.counts)
            let opened = state.health.failed(why)
            if opened { state.counts.givenUp = why }
            return opened
        }
        if opened {
            logger.warning(
                "remote cache \(settings.shownURL) is given up for the rest of this run after \(settings.errorsToGiveUp) errors in a row (last: \(why)); the run goes on without it"
            )
        } else {
            logger.debug("remote cache error", metadata: ["remote.url": "\(settings.shownURL)", "remote.problem": "\(why)"])
        }
    }
}
