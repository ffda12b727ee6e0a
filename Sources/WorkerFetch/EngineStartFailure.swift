import WorkerSupport

/// Why a run's fetch engines could not start: a library they need would not load or refused an
/// option, or the system gave no thread. Exit 4: the machine has to change, not the manifest.
public enum EngineStartFailure: Error, Sendable, Equatable, CustomStringConvertible, ExitClassified {
    /// A shared library the downloads need (libcurl) could not be loaded or set up.
    case library(name: String, reason: String)
    /// The system would not give the run what it needs (a thread), or the run was given no
    /// transport, in words.
    case resources(String)

    public var description: String {
        switch self {
        case .library(let name, let reason):
            "cannot download: \(name) could not be loaded (\(reason)); Debian: apt-get install libcurl4"
        case .resources(let problem):
            problem
        }
    }

    public var exitClass: ExitClass { .unusable }

    public var exitMessage: String { "worker: \(self)" }
}
