import FoundationEssentials
import Synchronization
import WorkerManifest
import WorkerStore
import WorkerSupport

/// How the fetch stage reaches the URLs of one registered kind (`s3://`, `oci://`): its settings
/// and credentials, where a URL is requested and how that request is authorized, the parts a URL
/// stands for, and its listing for `worker manifest`. One type per kind, in the kind's folder
/// (Sources/WorkerKinds); `Locator` holds one value of each, and knows no kind by name.
public protocol KindAccess: Sendable {
    /// The kind whose URLs this reaches.
    var kind: any URLKind { get }

    /// This access with the command line's options of its kind (`Locator.options`, by their long
    /// names: `plain-http`).
    func with(options: [String: String]) -> any KindAccess

    /// This access with its settings read from `environment` (credentials, endpoints): asked once
    /// a run has URLs of the kind, before its first request. A setting that cannot be read is an
    /// error (exit 2).
    func configured(environment: [String: String]) throws(KindSettingsProblem) -> any KindAccess

    /// The location `listed` (of this kind) is requested at: `rewrite` applied where the kind
    /// says (to the URL as listed and to the one requested); `expected`, the hash its bytes must
    /// have; `origin`, when the caller knows it already; `memo`, the origin located before.
    func location(
        _ listed: String, rewrite: URLRewrite, origin: Origin?, expected: ContentHash?,
        memo: inout OriginMemo
    ) -> FetchLocation

    /// `location` (one this access made) with the authorization its requests carry now: a route
    /// keeps where a URL is requested for the whole run, while a registry's token is renewed.
    func authorized(_ location: FetchLocation, rewrite: URLRewrite) -> FetchLocation

    /// Where `listed` would be requested without `--rewrite` (every URL it may be asked at).
    func beforeRewrite(_ listed: String) -> [String]

    /// This access with what `urls` (of this kind) must ask before their requests (a registry's
    /// token), and what could not be had.
    func authorizing(
        _ urls: [String], store: ContentStore, settings: FetchSettings,
        environment: [String: String]
    ) async -> (access: any KindAccess, problems: [String])

    /// The parts each of `urls` stands for (`URLKind.expands`), by URL, and this access with what
    /// reading them asked.
    func parts(
        of urls: [String], mirrors: [String: [String]], store: ContentStore, settings: FetchSettings
    ) async
        -> (results: [String: Result<[ManifestSet.Part], ManifestSet.PartsProblem>], access: any KindAccess)

    /// When what it asked must be asked again (monotonic seconds); nil when nothing expires.
    var renewBy: Double? { get }

    /// This access without what it asked before requests (to ask again).
    var unauthorized: any KindAccess { get }

    /// A reader of this kind's folders for `worker manifest URL` (the kind is `.listable`),
    /// through `settings`' transport with `width` connections; nil for a kind without listings.
    func lister(store: ContentStore, settings: FetchSettings, width: Int) throws(EngineStartFailure) -> (any FolderLister)?

    /// Whether `other` is the same access (of the same kind, with the same settings).
    func isSame(as other: any KindAccess) -> Bool
}

extension KindAccess {
    public func with(options: [String: String]) -> any KindAccess { self }

    public func configured(environment: [String: String]) throws(KindSettingsProblem) -> any KindAccess {
        self
    }

    public func authorized(_ location: FetchLocation, rewrite: URLRewrite) -> FetchLocation { location }

    public func beforeRewrite(_ listed: String) -> [String] { [listed] }

    public func authorizing(
        _ urls: [String], store: ContentStore, settings: FetchSettings,
        environment: [String: String]
    ) async -> (access: any KindAccess, problems: [String]) {
        (self, [])
    }

    public func parts(
        of urls: [String], mirrors: [String: [String]], store: ContentStore, settings: FetchSettings
    ) async
        -> (results: [String: Result<[ManifestSet.Part], ManifestSet.PartsProblem>], access: any KindAccess)
    {
        (Dictionary(uniqueKeysWithValues: urls.map { ($0, .failure(ManifestSet.PartsProblem("\($0): stands for no other files"))) }), self)
    }

    public var renewBy: Double? { nil }
    public var unauthorized: any KindAccess { self }

    public func lister(store: ContentStore, settings: FetchSettings, width: Int) throws(EngineStartFailure) -> (any FolderLister)? {
        nil
    }
}

extension KindAccess where Self: Equatable {
    public func isSame(as other: any KindAccess) -> Bool {
        (other as? Self) == self
    }
}

/// Why a kind's settings cannot be read (an unreadable AWS config, a profile that is nowhere):
/// a usage error, exit 2, before any request. Never a secret.
public struct KindSettingsProblem: Error, Sendable, CustomStringConvertible, ExitClassified {
    /// The kind's scheme (`Locator.configuring` names it).
    public var scheme = ""
    public let reason: String

    public init(_ reason: String) { self.reason = reason }

    public var description: String { "cannot reach \(scheme):// URLs: \(reason)" }
    public var exitClass: ExitClass { .usage }
    public var exitMessage: String { "worker: \(self)" }
}

/// The registered kinds' accesses, as the program installs them (`WorkerKinds.install()`): a new
/// `Locator` starts with these.
public enum KindAccesses {
    private static let installed = Mutex<[any KindAccess]>([])

    /// Every installed access, in its order.
    public static var all: [any KindAccess] { installed.withLock { $0 } }

    /// Makes `accesses` the registered kinds: their URLs parse (`URLKinds`) and are reached.
    public static func install(_ accesses: [any KindAccess]) {
        installed.withLock { $0 = accesses }
        URLKinds.install(accesses.map(\.kind))
    }
}
