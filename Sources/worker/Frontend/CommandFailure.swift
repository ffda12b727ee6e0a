import ArgumentParser
import WorkerStore
import WorkerSupport

/// The command line's own ways of not succeeding, each with its cause: what stderr says, and the
/// class of the exit, declared here once (as each layer's errors declare theirs: `CacheError`,
/// `SyncFailure`, `ManifestErrors`). Commands throw these or a layer's error and never print their
/// own end or exit; `WorkerCommand` alone does both, mapping the class to its code.
enum CommandFailure: ExitClassified {
    /// What a command was asked for did not all get done: entries, URLs or objects failed, or
    /// are not in the cache (the lines name them; they may have been said already).
    case unfinished([String])
    /// An option's value that cannot be used, found as the command's settings are made: said as
    /// ArgumentParser says a usage error, with the command's usage.
    case option(String, command: any ParsableCommand.Type)
    /// A first word that names no subcommand (with a suggestion).
    case unknownCommand(String)
    /// An output that would overwrite a manifest or a file worker did not write, or whose folder
    /// is missing.
    case outputRefused(String)
    /// Input a command reads that cannot be used: a list of URLs, trusted keys, a folder to scan,
    /// URLs that are not URLs.
    case badInput(String)
    /// Lines of a list of URLs that are not URLs, each with its place.
    case badList([String])
    /// `--signature` without trusted keys to check it against.
    case signatureWithoutKeys
    /// No cache at the folder (`reason`: why it cannot be read, when it is there).
    case noCache(directory: String, reason: String?)
    /// An output, or a file read for one, cannot be read or written.
    case outputFailed(String)

    var exitClass: ExitClass {
        switch self {
        case .unfinished: .failures
        case .option, .unknownCommand, .outputRefused, .badInput, .badList, .signatureWithoutKeys: .usage
        case .noCache, .outputFailed: .unusable
        }
    }

    /// What stderr says.
    var exitMessage: String {
        switch self {
        case .unfinished(let lines), .badList(let lines):
            return lines.joined(separator: "\n")
        case .unknownCommand(let message), .outputRefused(let message), .badInput(let message), .outputFailed(let message):
            return "worker: " + message
        case .signatureWithoutKeys:
            return "worker: --signature needs trusted keys to check it against (--trusted-keys or WORKER_TRUSTED_KEYS)"
        case .noCache(let directory, let reason?):
            return "worker: cannot read the cache at \(directory): \(reason)"
        case .noCache(let directory, nil):
            return "worker: no cache at \(directory) (nothing has been synced there; check --cache-dir or WORKER_CACHE_DIR)"
        case .option(let message, let command):
            // ArgumentParser's words for a usage error found while parsing (`validate`).
            let name = ["worker", command.configuration.commandName].compactMap { $0 }.joined(separator: " ")
            return "Error: \(message)\nUsage: \(WorkerCommand.usageString(for: command))\n"
                + "  See '\(name) --help' for more information."
        }
    }
}

/// Turns an option's `ValidationError` into the command's usage failure.
func optionChecked<Value>(for command: any ParsableCommand.Type, _ make: () throws -> Value) throws(CommandFailure) -> Value {
    do {
        return try make()
    } catch let error as ValidationError {
        throw .option(error.message, command: command)
    } catch let failure as CommandFailure {
        throw failure
    } catch {
        throw .option("\(error)", command: command)
    }
}
