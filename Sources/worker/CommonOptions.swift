import ArgumentParser
import Foundation
import ManifestSync

/// Options every command shares.
struct CommonOptions: ParsableArguments {
    @Option(name: .customLong("cache-dir"),
            help: "The cache directory (env WORKER_CACHE_DIR; default $XDG_CACHE_HOME/worker or ~/.cache/worker).")
    var cacheDirectory: String?

    @Option(name: [.short, .customLong("jobs")], help: "Downloads at once.")
    var jobs = 16

    @Option(name: .customLong("report"), help: "Write the JSON report (schema 1) to this file.")
    var reportPath: String?

    @Flag(name: .customLong("report-all"), help: "List unchanged entries in the report too.")
    var reportAll = false

    @Flag(name: [.short, .customLong("quiet")], help: "Print nothing on stdout; failures still go to stderr.")
    var quiet = false

    func validate() throws {
        guard (1...1024).contains(jobs) else { throw ValidationError("--jobs must be between 1 and 1024") }
    }

    /// The cache directory, absolute: the option, else the environment, else the XDG default.
    func resolvedCacheDirectory() -> String {
        Self.resolveCacheDirectory(cacheDirectory)
    }

    static func resolveCacheDirectory(_ cacheDirectory: String?) -> String {
        let environment = ProcessInfo.processInfo.environment
        let chosen: String
        if let cacheDirectory, !cacheDirectory.isEmpty {
            chosen = cacheDirectory
        } else if let fromEnvironment = environment["WORKER_CACHE_DIR"], !fromEnvironment.isEmpty {
            chosen = fromEnvironment
        } else if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
            chosen = xdg + "/worker"
        } else {
            chosen = (environment["HOME"] ?? NSHomeDirectory()) + "/.cache/worker"
        }
        return URL(fileURLWithPath: chosen).standardizedFileURL.path
    }
}

/// Prints to stdout/stderr without buffering surprises between the two.
enum Console {
    /// The JSON style of every command's output: indented, sorted keys, slashes as they are.
    static func json(_ value: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(value)
    }

    static func out(_ text: String) {
        guard !text.isEmpty else { return }
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    static func error(_ text: String) {
        guard !text.isEmpty else { return }
        FileHandle.standardError.write(Data((text.hasSuffix("\n") ? text : text + "\n").utf8))
    }
}

/// Loads manifests or ends the run with exit 2 and every located problem on stderr.
func loadManifests(_ paths: [String]) throws -> ManifestSet {
    do {
        return try ManifestLoader().load(paths: paths)
    } catch {
        Console.error(error.description)
        throw ExitCode(ExitStatus.usage)
    }
}

/// Writes the JSON report when asked; a report that cannot be written is exit 4.
func writeReport(_ report: SyncReport, to path: String?) throws {
    guard let path else { return }
    do {
        try JSONReportWriter.write(report, to: path)
    } catch {
        Console.error("cannot write the report: \(error.localizedDescription)")
        throw ExitCode(ExitStatus.cacheUnusable)
    }
}

/// Maps a run-stopping cache error to its exit code, after printing it.
func cacheExitCode(_ error: CacheError) -> ExitCode {
    Console.error("worker: \(error)")
    switch error {
    case .locked: return ExitCode(ExitStatus.locked)
    case .unusable: return ExitCode(ExitStatus.cacheUnusable)
    }
}

/// `--wait-lock`, the same for every command that writes: a duration (`30`, `30s`, `5m`).
struct LockOptions: ParsableArguments {
    @Option(name: .customLong("wait-lock"), help: "How long to wait for another run's lock before exit 3 (e.g. 30s; default: no limit).")
    var waitLock: String?

    func validate() throws {
        _ = try seconds()
    }

    /// The wait in seconds; nil waits without limit.
    func seconds() throws -> Double? {
        try waitLock.map { text in
            guard let seconds = Units.duration(text) else { throw ValidationError("--wait-lock: '\(text)' is not a duration (e.g. 30s)") }
            return seconds
        }
    }
}
