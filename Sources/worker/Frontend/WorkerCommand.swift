import ArgumentParser
import CurlTransport
import FoundationEssentials
import Glibc
import Logging
import WorkerKinds
import WorkerSupport

/// `worker`: keeps a local cache of remote files in step with YAML manifests.
@main
struct WorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "Keep a local cache of remote files in step with YAML manifests of URL + content hash.",
        version: "worker \(WorkerVersion.current)",
        subcommands: [
            Sync.self, Get.self, Plan.self, Status.self, Verify.self, GC.self, PathCommand.self, Remove.self, Clear.self,
            Export.self, Fingerprint.self, ManifestCommand.self, Push.self, Completion.self,
        ]
    )

    /// Runs the command, mapping usage errors to exit 2 (docs/EXIT-CODES.md) instead of EX_USAGE.
    static func main() async {
        ProcessSetup.atStart()
        // A file-size limit (ulimit -f) must fail a write with EFBIG, reported like a full disk,
        // rather than kill the run with SIGXFSZ.
        signal(SIGXFSZ, SIG_IGN)
        // The kinds of URL beyond http(s) and files, before anything parses a URL.
        Kinds.install()
        // The one logging set-up of the process: the engine's lines as the console writes its own
        // (in the format the command says, once it is parsed: a logger is made only by then).
        LoggingSystem.bootstrap { label in
            Console.jsonLines ? JSONLogHandler(label: label) as any LogHandler : TextLogHandler(label: label)
        }
        await runCommand()
    }

    /// Parses and runs the command, and exits from the thread it ends on. (Returning to `main`
    /// would go back to the main actor first: on Linux a new thread for the main queue, made just
    /// to exit.)
    nonisolated private static func runCommand() async -> Never {
        // libcurl (thirty-odd libraries, ~7 ms to load here) starts loading on a thread of its own
        // now, beside the argument parsing and the manifests, when the command line says a sync
        // that surely downloads (BENCHMARKS.md as of 278b2e0, "Where a 300-file cold sync's time goes"). The
        // threads such a run needs before its downloads are made first: one made during the load
        // waits for it to end. Every exit waits for the load (`end`, and a command's success).
        if Invocation.surelyDownloads {
            StopSignals.startWatching()
            CurlTransport().prepare()
        }
        do {
            var command: any ParsableCommand
            do {
                command = try parsedDirectly() ?? parseAsRoot()
            } catch {
                // A first word that names no subcommand is answered with a suggestion, whatever
                // else the words say.
                if let first = Invocation.current?.words.first, !first.hasPrefix("-"), let message = unknownCommand(first) {
                    end(CommandFailure.unknownCommand(message))
                }
                throw error
            }
            Console.decide(json: (command as? LogFormatChoosing)?.logFormat == .json)
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            CurlTransport().settle()
            StopSignals.endProcessIfStopped()
            Glibc.exit(0)
        } catch {
            end(error)
        }
    }

    /// The subcommand the first argument names, parsed as ArgumentParser parses it below
    /// `worker`, without the root's own pass — which builds the subcommand's whole argument set
    /// twice more, by reflection, to ask whether it takes passthrough arguments (none does): 11 M
    /// instructions of a 300-file sync's 281 M (BENCHMARKS.md as of 278b2e0, "URLs as values"). Nil when the arguments do not
    /// start with a subcommand's name or do not parse (help, a usage error): the root's parse
    /// then answers, in its words.
    nonisolated private static func parsedDirectly() -> (any ParsableCommand)? {
        let arguments = CommandLine.arguments.dropFirst()
        guard let first = arguments.first,
            let command = configuration.subcommands.first(where: { $0.configuration.commandName == first })
        else { return nil }
        // Help (`-h`, `--help`) is a command of its own: the root's, which names `worker`.
        guard let parsed = try? command.parseAsRoot(Array(arguments.dropFirst())), type(of: parsed) == command else { return nil }
        return parsed
    }

    /// The one place a command's end is said and its exit code decided: an error of a class a
    /// command threw (`CommandFailure`, a layer's), or ArgumentParser's own errors (usage, help,
    /// version). A run stopped by
    /// SIGINT or SIGTERM ends by the signal, once its outputs and this message are written.
    nonisolated private static func end(_ error: any Error) -> Never {
        // Exiting while libcurl loads can crash in its libraries' constructors and destructors.
        CurlTransport().settle()
        if let failure = error as? any ExitClassified {
            Console.error(failure.exitMessage)
            StopSignals.endProcessIfStopped()
            Glibc.exit(failure.exitClass.rawValue)
        }
        if StopSignals.received != nil {
            Console.error(fullMessage(for: error))
            StopSignals.endProcessIfStopped()
        }
        // A usage error is exit 2 (docs/EXIT-CODES.md), not ArgumentParser's EX_USAGE (64).
        if exitCode(for: error).rawValue == 64 {
            Console.error(fullMessage(for: error))
            Glibc.exit(ExitClass.usage.rawValue)
        }
        exit(withError: error)
    }
}

/// "unknown command 'snyc'; did you mean 'sync'?" for a first word that names no subcommand.
func unknownCommand(_ word: String) -> String? {
    // Every subcommand names itself: deriving a name from the type (`String(describing:)`, as
    // ArgumentParser does for each subcommand when parsing) is a scan of every conformance
    // record, which every run would pay. (A subcommand without a `commandName` is refused here
    // as unknown, so its first test through the binary says so.)
    let names = WorkerCommand.configuration.subcommands.compactMap { $0.configuration.commandName } + ["help"]
    guard !names.contains(word) else { return nil }
    let close = names.map { ($0, editDistance($0, word)) }.filter { $0.1 <= 2 }.min { $0.1 < $1.1 }
    return "unknown command '\(word)'" + (close.map { "; did you mean '\($0.0)'?" } ?? " (see `worker --help`)")
}

/// Levenshtein distance, for suggestions.
func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a), b = Array(b)
    var row = Array(0...b.count)
    for i in 1...max(a.count, 1) where !a.isEmpty {
        var previous = row[0]
        row[0] = i
        for j in stride(from: 1, through: b.count, by: 1) {
            let current = row[j]
            row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
            previous = current
        }
    }
    return row[b.count]
}
