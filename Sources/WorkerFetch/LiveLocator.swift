import Synchronization
import WorkerManifest
import WorkerStore
import WorkerSupport

/// The run's locator while its downloads last, with what the kinds of its URLs ask before their
/// requests (`Locator.authorizing`: a registry's token) kept current: a token is asked for again
/// 30 seconds before it expires, and each request made after that carries the new one.
public final class LiveLocator: Sendable {
    private let locator: Mutex<Locator>
    private let renewal: Mutex<Task<Void, Never>?> = Mutex(nil)

    /// The locator to make a request with now.
    public var current: Locator { locator.withLock { $0 } }

    /// Whether its authorizations are renewed while the downloads last (else `current` stays).
    public var renews: Bool { renewal.withLock { $0 != nil } }

    /// `base` authorized for `urls`; what could not be had is said through `warn`.
    public init(
        _ base: Locator, for urls: [String], store: ContentStore, settings: FetchSettings,
        warn: @escaping @Sendable (String) -> Void
    ) async {
        let (authorized, problems) = await base.authorizing(urls, store: store, settings: settings)
        for problem in problems { warn(problem) }
        locator = Mutex(authorized)
        guard authorized.renewBy != nil else { return }
        let task = Task { [weak self] in
            while !Task.isCancelled, let self, let due = self.current.renewBy {
                let wait = max(1, due - Monotonic.now())
                try? await Task.sleep(nanoseconds: UInt64(wait * 1e9))
                guard !Task.isCancelled else { return }
                // Every registry asked anew: tokens that expire are replaced.
                let fresh = self.current.unauthorized
                let (renewed, problems) = await fresh.authorizing(urls, store: store, settings: settings)
                for problem in problems { warn(problem) }
                self.locator.withLock { $0 = renewed }
            }
        }
        renewal.withLock { $0 = task }
    }

    /// A locator that needs nothing kept current.
    public init(fixed: Locator) {
        locator = Mutex(fixed)
    }

    /// Ends the renewals; call once the downloads are done.
    public func stop() {
        renewal.withLock { $0?.cancel() }
    }
}
