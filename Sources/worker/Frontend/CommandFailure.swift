import ArgumentParser
import WorkerStore
import WorkerSupport

/// The command line's own ways of not succeeding: the lines for stderr, and (declared here, as
/// each layer's errors declare theirs: `CacheError`, `ManifestErrors`) the class of the exit.
/// Commands throw these or a layer's error and never print their own end or exit; `WorkerCommand`
/// alone does both, mapping the class to its code.
enum CommandFailure: ExitClassified {
    /// Some entries, URLs or objects failed; the lines name them.
    case failed([String])
    /// An option's value that cannot be used, found as the command's settings are made: said as
    /// ArgumentParser says a usage error, with the command's usage.
    case option(String, command: any ParsableCommand.Type)
    /// Input that cannot be used: an output that would overwrite a manifest, a list that cannot
    /// be read.
    case input([String])
    /// The cache or an output cannot be read or written.
    case unusable([String])

    /// One line of input that cannot be used.
    static func input(_ line: String) -> CommandFailure { .input([line]) }

    /// One line about a cache or output that cannot be used.
    static func unusable(_ line: String) -> CommandFailure { .unusable([line]) }

    var exitClass: ExitClass {
        switch self {
        case .failed: .failures
        case .option, .input: .usage
        case .unusable: .unusable
        }
    }

    /// What stderr says.
    var exitMessage: String {
        switch self {
        case .failed(let lines), .input(let lines), .unusable(let lines):
            return lines.joined(separator: "\n")
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
