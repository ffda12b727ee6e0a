import ArgumentParser
import FoundationEssentials
import Glibc
import WorkerFetch
import WorkerManifest
import WorkerReport
import WorkerStore
import WorkerSupport
import WorkerSync

/// `worker manifest DIR… --base-url URL` or `worker manifest --urls FILE|-`: write a manifest.
struct ManifestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "manifest",
        abstract: "Write a manifest: for the files under folders, or for URLs downloaded once through the cache.",
        discussion: """
            With folders, every file below them (hidden ones and symlinks skipped) is hashed (SHA-256) \
            and listed with its path relative to its folder, in a stable order, under --base-url: the \
            manifest of a folder you publish at that URL. With --urls (one URL a line; blank lines and \
            # comments skipped; - for standard input), each URL is downloaded once through the cache, \
            which it warms, and pinned to the hash of what arrived. The manifest goes to standard \
            output, or to FILE with -o.

            Examples:
              worker manifest public/avatars --base-url https://cdn.example.com/avatars/ -o manifests/avatars.yaml
              worker manifest --urls urls.txt -o manifests/pinned.yaml
              printf 'https://cdn.example.com/a.png\\n' | worker manifest --urls -
            """)

    @Argument(help: "Folders whose files the manifest lists.")
    var folders: [String] = []

    @Option(name: .customLong("base-url"), help: "The URL the folders are published at (each file's URL is relative to it).")
    var baseURL: String?

    @Option(name: .customLong("urls"), help: "A file of URLs (or - for standard input) to download once and pin.")
    var urls: String?

    @Option(help: "The manifest's name (default: the output file's name).")
    var name: String?

    @Option(name: .shortAndLong, help: "Write the manifest to FILE instead of standard output.")
    var output: String?

    @OptionGroup(title: "Cache (with --urls)") var cache: CacheOptions

    @OptionGroup(title: "Network (with --urls)") var network: NetworkOptions

    @OptionGroup var lock: LockOptions

    func validate() throws {
        if urls == nil {
            guard !folders.isEmpty else { throw ValidationError("give folders (with --base-url) or --urls FILE") }
            guard let baseURL else { throw ValidationError("--base-url: the URL the folders are published at") }
            guard let parsed = URL(string: baseURL), ["http", "https"].contains(parsed.scheme?.lowercased() ?? ""),
                  parsed.host?.isEmpty == false, parsed.query == nil, parsed.fragment == nil
            else { throw ValidationError("--base-url: '\(baseURL)' is not an absolute http or https URL without query") }
        } else {
            guard folders.isEmpty, baseURL == nil else { throw ValidationError("--urls takes no folders and no --base-url") }
        }
    }

    func run() async throws {
        let fetch = try network.settings(for: Self.self)
        if let output, let problem = Self.outputProblem(output) {
            // Never over a file that is not a manifest worker wrote (a typo must not eat a source file).
            throw CommandFailure.input("worker: -o '\(output)' \(problem); refusing to overwrite it")
        }
        if let output, access(output, F_OK) != 0, let problem = OutputGuard.folderProblem(output) {
            throw CommandFailure.input("worker: -o '\(output)': \(problem)")
        }
        let yaml: String
        var failed = 0
        if let urls {
            (yaml, failed) = try await pinned(urls, fetch: fetch)
        } else {
            do {
                let items = try ManifestWriter.scan(folders)
                yaml = ManifestWriter.yaml(name: name, baseURL: baseURL, items: items)
            } catch {
                throw CommandFailure.input("worker: \(error)")
            }
        }
        if let output {
            do {
                try AtomicFile.write(Data(yaml.utf8), to: output)
            } catch {
                throw CommandFailure.unusable("worker: \(ErrorText.describe(error))")
            }
        } else {
            Console.out(yaml)
        }
        // Each URL that failed was said as the manifest was made, before the manifest itself.
        if failed > 0 { throw CommandFailure.failed([]) }
    }

    /// Why `path` may not be replaced, or nil: it is missing, empty, or a manifest this command
    /// wrote (its first bytes say so, read as bytes: a file that is not text is refused too).
    static func outputProblem(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        guard (info.st_mode & S_IFMT) == S_IFREG else { return "exists and is not a regular file" }
        guard info.st_size > 0 else { return nil }
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return "exists and cannot be read" }
        defer { close(fd) }
        let mark = Array("# Written by worker manifest".utf8)
        var head = [UInt8](repeating: 0, count: mark.count)
        let count = read(fd, &head, head.count)
        return count == mark.count && head == mark ? nil : "exists and was not written by `worker manifest`"
    }

    /// The manifest of the URLs that could be fetched, and how many could not (each said on stderr).
    private func pinned(_ source: String, fetch: FetchSettings) async throws -> (String, Int) {
        let text: String
        if source == "-" {
            text = String(decoding: Console.readStandardInput(), as: UTF8.self)
        } else {
            guard let read = try? String(contentsOfFile: source, encoding: .utf8) else {
                throw CommandFailure.input("worker: cannot read --urls '\(source)'")
            }
            text = read
        }
        // Line numbers stay those of the file: blank and comment lines become empty, then skipped.
        // A line ends at LF, CR LF or a lone CR (a list saved on Windows or an old Mac).
        let lines = text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }.map {
            Text.trimmingSpaces($0)
        }
        var urls: [String] = []
        var lineOf: [Int] = []
        for (offset, line) in lines.enumerated() where !line.isEmpty && !line.hasPrefix("#") {
            urls.append(line)
            lineOf.append(offset + 1)
        }
        var options = SyncOptions(cacheDirectory: cache.resolved)
        options.fetch = fetch
        // What it pins seeds the tier: runners of the manifest it writes ask the tier by these hashes.
        options.fetch.remoteCache?.uploadsUnpinned = true
        options.waitLock = lock.seconds()
        let result: (items: [ManifestWriter.Item], failed: [SyncReport.Entry])
        do {
            result = try await SyncEngine(options: options, context: .command()).pin(urls: urls, source: source == "-" ? "stdin" : source)
        } catch .manifest(let errors) {
            throw CommandFailure.input(errors.diagnostics.map { diagnostic in
                let line = diagnostic.line > 0 && diagnostic.line <= lineOf.count ? lineOf[diagnostic.line - 1] : diagnostic.line
                return "\(diagnostic.path):\(line): \(diagnostic.message)"
            })
        } catch .cache(let error) {
            throw CommandFailure.cache(error)
        }
        for entry in result.failed {
            Console.error(TextReportWriter.failureLine(entry) + " (left out of the manifest)")
        }
        let name = name ?? output.map { PathName.deletingExtension(PathName.lastComponent($0)) }
        return (ManifestWriter.yaml(name: name, baseURL: nil, items: result.items), result.failed.count)
    }
}
