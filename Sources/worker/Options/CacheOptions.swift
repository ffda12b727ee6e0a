import ArgumentParser
import FoundationEssentials
import Glibc

/// `--cache-dir`, the same for every command.
struct CacheOptions: ParsableArguments {
    @Option(
        name: .customLong("cache-dir"),
        help: "The cache directory (env WORKER_CACHE_DIR; default $XDG_CACHE_HOME/worker or ~/.cache/worker).")
    var cacheDirectory: String?

    /// The cache directory, absolute: the option, else the environment, else the XDG default.
    var resolved: String {
        Self.resolve(cacheDirectory)
    }

    /// The cache directory `--cache-dir` names (nil: not given), absolute.
    static func resolve(_ cacheDirectory: String?) -> String {
        let environment = ProcessInfo.processInfo.environment
        let chosen: String
        if let cacheDirectory, !cacheDirectory.isEmpty {
            chosen = cacheDirectory
        } else if let fromEnvironment = environment["WORKER_CACHE_DIR"], !fromEnvironment.isEmpty {
            chosen = fromEnvironment
        } else if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
            chosen = xdg + "/worker"
        } else {
            chosen = (environment["HOME"] ?? FileManager.default.homeDirectoryForCurrentUser.path) + "/.cache/worker"
        }
        return URL(fileURLWithPath: chosen).standardizedFileURL.path
    }

    /// The resolved directory, or exit 4 when it holds no cache (for commands that never create one).
    func existing() throws -> String {
        let directory = resolved
        try requireCache(directory)
        return directory
    }
}
