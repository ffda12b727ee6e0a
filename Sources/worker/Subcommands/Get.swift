import ArgumentParser
import FoundationEssentials
import Glibc
import WorkerFetch
import WorkerManifest
import WorkerReport
import WorkerStore
import WorkerSupport
import WorkerSync

/// `worker get URL [--hash H] [-o FILE|-]`: the cached file for URL, fetched on a miss.
struct Get: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Print the cached file's path for URL, downloading, verifying and storing it first on a miss.",
        discussion: """
            Looks in the index, then at the object file, then on the network (SDImageCache's order). \
            A hit makes no request. A miss is stored like a sync entry (gc ages it). With -o the bytes \
            are written to FILE, or to standard output with -o -. Exit 1 when the URL cannot be fetched \
            or its bytes do not match --hash (nothing is stored then).

            Examples:
              worker get https://cdn.example.com/u/42.png
              worker get https://cdn.example.com/u/42.png --hash sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 -o avatar.png
              worker get https://cdn.example.com/logo.svg -o - | head
            """)

    @Argument(help: "An absolute http, https or s3 URL.")
    var url: String

    @Option(help: "The content hash it must have (any manifest hash form).")
    var hash: HashArgument?

    @Option(name: .shortAndLong, help: "Write the bytes to FILE (or - for standard output) instead of printing the path.")
    var output: String?

    @OptionGroup(title: "Cache") var cache: CacheOptions

    @OptionGroup(title: "Network") var network: NetworkOptions

    @OptionGroup var lock: LockOptions

    func validate() throws {
        if case .failure(let error)? = hash?.parsed {
            throw ValidationError("--hash: \(error.message)")
        }
    }

    func run() async throws {
        var options = SyncOptions(cacheDirectory: cache.resolved)
        options.fetch = try network.settings(for: Self.self)
        options.waitLock = lock.seconds()
        // Checked before the lookup: a fetch whose bytes cannot be written is work for nothing.
        if let output, output != "-", access(output, F_OK) != 0, let problem = OutputGuard.folderProblem(output) {
            throw CommandFailure.outputRefused("-o '\(output)': \(problem)")
        }
        let expected = try hash?.parsed.get()
        let stop = StopSignals.enable { Console.notice("worker: \($0)") }
        let lookup: SyncEngine.Lookup
        do {
            lookup = try await SyncEngine(options: options, context: .command(stop: stop)).get(url: url, hash: expected)
        } catch .manifest(let errors) {
            throw CommandFailure.badInput(errors.diagnostics.map(\.message).joined(separator: "; "))
        } catch {
            throw error
        }
        guard let path = lookup.path else {
            let entry = lookup.entry
            throw CommandFailure.unfinished([
                "failed: \(Redact.url(url)): \(entry?.reason?.rawValue ?? "failed"): \(entry?.error ?? "not fetched")"
            ])
        }
        switch output {
        case nil:
            Console.out(path + "\n")
        case "-":
            try copy(from: path, to: STDOUT_FILENO)
        case let file?:
            try writeFile(from: path, to: file)
        }
    }

    /// The object's bytes to `fd`.
    private func copy(from path: String, to fd: Int32) throws {
        let input = open(path, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw failure("cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { close(input) }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = read(input, &buffer, buffer.count)
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw failure("cannot read \(path): \(String(cString: strerror(errno)))") }
            if count == 0 { return }
            var offset = 0
            while offset < count {
                let written = buffer.withUnsafeBytes { write(fd, $0.baseAddress! + offset, count - offset) }
                if written < 0, errno == EINTR { continue }
                guard written > 0 else { throw failure("cannot write the output: \(String(cString: strerror(errno)))") }
                offset += written
            }
        }
    }

    /// The object's bytes to FILE, by way of a temporary sibling and a rename.
    private func writeFile(from path: String, to file: String) throws {
        do {
            try AtomicFile.write(Data(contentsOf: URL(fileURLWithPath: path)), to: file)
        } catch {
            throw failure(ErrorText.describe(error))
        }
    }

    private func failure(_ message: String) -> CommandFailure {
        .outputFailed(message)
    }
}
