import ArgumentParser
import Glibc
import WorkerSync

/// The command line read once before it is parsed as a command, by ArgumentParser as the rest is:
/// - the log format (so that even a usage error is a JSON line when `--log-format json` is given);
///   a command line that parses says its log format itself (`LogFormatChoosing`);
/// - the words in their order (a first word that names no subcommand is answered with a
///   suggestion, `WorkerCommand.unknownCommand`);
/// - whether it says a sync that surely downloads (`surelyDownloads`).
struct Invocation: ParsableArguments {
    @Option(name: .customLong("log-format")) var logFormat: LogFormat?
    @Option(name: .customLong("cache-dir")) var cacheDirectory: String?
    @Flag(name: .customLong("offline")) var offline = false
    @Flag(name: .customLong("dry-run")) var dryRun = false

    @Argument(parsing: .allUnrecognized) var words: [String] = []

    /// This process's (nil when not even this much can be read: the command's own parse then says
    /// what is wrong, as text).
    static let current: Invocation? = try? parse()

    /// `worker sync` (not `--offline`, `--dry-run` or `--help`) into a cache without an index yet,
    /// where every http(s) entry is a download. A guess, never a decision (libcurl starts loading
    /// on it, `WorkerCommand.runCommand`): wrong, libcurl loads for nothing or later, and the run
    /// is the same.
    static var surelyDownloads: Bool {
        guard let current, current.words.first == "sync", !current.dryRun else { return false }
        return SyncEngine.surelyDownloads(cacheDirectory: CacheOptions.resolve(current.cacheDirectory), offline: current.offline)
    }
}
