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

/// How a command ends when it does not succeed: the lines for stderr and the exit code. Commands
/// throw these values and never print their own end or exit; `WorkerCommand` alone does both
/// (`ending(for:)`).
enum CommandFailure: Error {
    /// Some entries, URLs or objects failed (exit 1); the lines name them.
    case failed([String])
    /// An option's value that cannot be used, found as the command's settings are made (exit 2):
    /// said as ArgumentParser says a usage error, with the command's usage.
    case option(String, command: any ParsableCommand.Type)
    /// Input that cannot be used: manifest problems with their positions, an output that would
    /// overwrite a manifest (exit 2).
    case input([String])
    /// A run-stopping cache error (exit 3 when another run holds the lock, 2 or 4 by kind).
    case cache(CacheError)
    /// The cache or an output cannot be read or written (exit 4).
    case unusable([String])

    /// One line of input that cannot be used.
    static func input(_ line: String) -> CommandFailure { .input([line]) }

    /// One line about a cache or output that cannot be used.
    static func unusable(_ line: String) -> CommandFailure { .unusable([line]) }

    /// The code the process ends with.
    var exitStatus: Int32 {
        switch self {
        case .failed: ExitStatus.failures
        case .option, .input: ExitStatus.usage
        case .unusable: ExitStatus.cacheUnusable
        case .cache(let error):
            switch error {
            case .locked, .manifestUnavailable: ExitStatus.locked
            case .treeRefused, .awsSettings, .rewriteRefused: ExitStatus.usage
            case .unusable, .index, .system, .output, .library, .notWritable, .notReadable, .unsafe, .unsafeFolder, .resources:
                ExitStatus.cacheUnusable
            }
        }
    }

    /// What stderr says.
    var message: String {
        switch self {
        case .failed(let lines), .input(let lines), .unusable(let lines):
            return lines.joined(separator: "\n")
        case .cache(let error):
            return "worker: \(error)"
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
