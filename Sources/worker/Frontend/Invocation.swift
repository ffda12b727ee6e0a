import ArgumentParser

/// What is known of the command line before it is parsed as a command, read by ArgumentParser as
/// the rest is: the log format (so that even a usage error is a JSON line when `--log-format json`
/// is given) and the words in their order (a first word that names no subcommand is answered with
/// a suggestion, `WorkerCommand.unknownCommand`).
struct Invocation: ParsableArguments {
    @Option(name: .customLong("log-format")) var logFormat: LogFormat?

    @Argument(parsing: .allUnrecognized) var words: [String] = []

    /// This process's (nil when not even this much can be read: the command's own parse then says
    /// what is wrong, as text).
    static let current: Invocation? = try? parse()
}
