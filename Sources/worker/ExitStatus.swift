import ArgumentParser
import WorkerStore

/// The exit codes of docs/EXIT-CODES.md.
enum ExitStatus {
    static let ok: Int32 = 0
    static let failures: Int32 = 1
    static let usage: Int32 = 2
    static let locked: Int32 = 3
    static let cacheUnusable: Int32 = 4
}

/// Maps a run-stopping cache error to its exit code, after printing it.
func cacheExitCode(_ error: CacheError) -> ExitCode {
    Console.error("worker: \(error)")
    switch error {
    case .locked: return ExitCode(ExitStatus.locked)
    case .treeRefused, .awsSettings: return ExitCode(ExitStatus.usage)
    case .unusable, .index, .system, .output, .library, .notWritable, .notReadable, .unsafe, .resources: return ExitCode(ExitStatus.cacheUnusable)
    }
}
