import ArgumentParser

/// `worker completion bash|zsh|fish`: the shell completion script, generated from the same
/// definitions as `--help` and the man page.
struct Completion: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "completion",
        abstract: "Print the shell completion script for bash, zsh or fish.",
        discussion: """
            Examples:
              worker completion bash > /etc/bash_completion.d/worker
              worker completion zsh > "${fpath[1]}/_worker"
              worker completion fish > ~/.config/fish/completions/worker.fish
            """)

    @Argument(help: "bash, zsh or fish.")
    var shell: String

    func validate() throws {
        guard CompletionShell(rawValue: shell) != nil else { throw ValidationError("completion: bash, zsh or fish") }
    }

    func run() throws {
        guard let kind = CompletionShell(rawValue: shell) else { return }
        Console.out(WorkerCommand.completionScript(for: kind))
    }
}
