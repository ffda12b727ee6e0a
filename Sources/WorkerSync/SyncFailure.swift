import WorkerFetch
import WorkerManifest
import WorkerStore
import WorkerSupport

/// Why a sync did not run to its report: its manifests are wrong (exit 2, nothing touched), what
/// they need cannot be had or is refused, the cache cannot be used or is locked, or the downloads'
/// engines cannot start.
public enum SyncFailure: Error, Sendable {
    case manifest(ManifestErrors)
    /// A remote manifest could not be fetched and no accepted copy of it is young enough
    /// (`--manifest-max-age`): exit 3, nothing fetched — the next run may succeed.
    case manifestUnavailable(String)
    /// What a manifest's entry stands for (a tag's layers) could not be read: its origin refused
    /// the credentials, or the rules a request (`--rewrite-strict`, credentials that would go
    /// where they must not). Exit 2, nothing fetched: the next run with the same settings fails alike.
    case refused(String)
    /// `--rewrite-strict`: locations no rule covers and no `--allow-origin` allows (exit 2,
    /// before any request), in words.
    case rewriteRefused(String)
    /// The settings of a kind the run has URLs of cannot be used (exit 2).
    case settings(KindSettingsProblem)
    case cache(CacheError)
    case engines(EngineStartFailure)
}

extension SyncFailure: ExitClassified, CustomStringConvertible {
    public var exitClass: ExitClass {
        switch self {
        case .manifest(let errors): errors.exitClass
        case .manifestUnavailable: .busy
        case .refused, .rewriteRefused: .usage
        case .settings(let problem): problem.exitClass
        case .cache(let error): error.exitClass
        case .engines(let failure): failure.exitClass
        }
    }

    public var description: String {
        switch self {
        case .manifest(let errors): errors.exitMessage
        case .manifestUnavailable(let problem): "cannot get the manifest: \(problem)"
        case .refused(let problem): "cannot read what the manifest lists: \(problem)"
        case .rewriteRefused(let problem): "refusing to run (--rewrite-strict): \(problem)"
        case .settings(let problem): problem.description
        case .cache(let error): error.description
        case .engines(let failure): failure.description
        }
    }

    public var exitMessage: String {
        switch self {
        case .manifest(let errors): errors.exitMessage
        case .settings(let problem): problem.exitMessage
        case .cache(let error): error.exitMessage
        case .engines(let failure): failure.exitMessage
        case .manifestUnavailable, .refused, .rewriteRefused: "worker: \(self)"
        }
    }
}
