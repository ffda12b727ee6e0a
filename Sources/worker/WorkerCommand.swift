import ArgumentParser
import Foundation

/// `worker`: keeps a local cache of remote files in step with YAML manifests.
@main
struct WorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "Keep a local cache of remote files in step with YAML manifests of URL + content hash.",
        subcommands: [Sync.self, Plan.self, Status.self, Verify.self, GC.self, PathCommand.self, Remove.self, Clear.self,
                      Export.self, Fingerprint.self]
    )

    /// Runs the command, mapping usage errors to exit 2 (PRODUCT.md) instead of EX_USAGE.
    static func main() async {
        // A file-size limit (ulimit -f) must fail a write with EFBIG, reported like a full disk,
        // rather than kill the run with SIGXFSZ.
        signal(SIGXFSZ, SIG_IGN)
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            if code.rawValue == 64 {
                FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
                Foundation.exit(ExitStatus.usage)
            }
            exit(withError: error)
        }
    }
}

/// The exit codes of PRODUCT.md.
enum ExitStatus {
    static let ok: Int32 = 0
    static let failures: Int32 = 1
    static let usage: Int32 = 2
    static let locked: Int32 = 3
    static let cacheUnusable: Int32 = 4
}
