import ArgumentParser
import FoundationEssentials
import Glibc
import WorkerFetch
import WorkerManifest
import WorkerReport
import WorkerStore
import WorkerSupport
import WorkerSync

/// `worker manifest DIR… --base-url URL`, `worker manifest s3://BUCKET/PREFIX/` or
/// `worker manifest --urls FILE|-`: write a manifest.
struct ManifestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "manifest",
        abstract: "Write a manifest: for the files under folders, for a bucket's objects, or for URLs downloaded once through the cache.",
        discussion: """
            With folders, every file below them (hidden ones and symlinks skipped) is hashed (SHA-256) \
            and listed with its path relative to its folder, in a stable order, under --base-url (http, \
            https or s3): the manifest of a folder you publish at that URL. With s3://BUCKET/PREFIX/, \
            the bucket is listed and the manifest's base_url is that prefix, each key relative to it \
            (so tree paths are the keys below the prefix); each object is pinned by the SHA-256 the \
            bucket stores for it when it has one (a HEAD, no download), else by hashing one download \
            through the cache. With sftp://[USER@]HOST[:PORT]/FOLDER/, the folder and those below it are \
            listed and each file is pinned by hashing one download. Run again, it asks only about files \
            whose ETag, size or date changed \
            (what it saw is kept in the cache's index; --update FILE, or -o FILE when that is a \
            manifest it wrote, names the earlier manifest whose pins must agree). With --urls (one URL \
            a line; blank lines and # comments skipped; - for standard input), each URL is downloaded \
            once through the cache, which it warms, and pinned to the hash of what arrived; a version \
            the cache holds is asked for again first (a conditional request), never pinned stale \
            (--offline pins what the cache has, and says so). The manifest goes to standard output, \
            or to FILE with -o.

            Examples:
              worker manifest public/avatars --base-url https://cdn.example.com/avatars/ -o manifests/avatars.yaml
              worker manifest s3://assets/avatars/ -o manifests/avatars.yaml
              worker manifest sftp://deploy@files.example.com/srv/drop/ -o manifests/drop.yaml
              worker manifest --urls urls.txt -o manifests/pinned.yaml
              printf 'https://cdn.example.com/a.png\\n' | worker manifest --urls -
            """)

    @Argument(help: "Folders whose files the manifest lists, or one s3://BUCKET/PREFIX/ or sftp://HOST/FOLDER/ to list.")
    var folders: [String] = []

    @Option(name: .customLong("base-url"), help: "The URL the folders are published at (each file's URL is relative to it).")
    var baseURL: String?

    @Option(name: .customLong("update"), help: "The earlier manifest of the same bucket prefix (default: -o FILE when worker wrote it).")
    var update: String?

    @Flag(help: "No network: pin what the cache holds (with --urls) without asking the origin again.")
    var offline = false

    @Flag(help: "Ask about every object (s3://) or download every URL (--urls) again, whatever was seen before.")
    var refresh = false

    @Option(name: .customLong("progress"), help: "auto (on a terminal, or a line every 5 s elsewhere), always or never.")
    var progress = ProgressPrinter.Mode.auto

    @Option(name: .customLong("urls"), help: "A file of URLs (or - for standard input) to download once and pin.")
    var urls: String?

    @Option(help: "The manifest's name (default: the output file's name).")
    var name: String?

    @Option(
        help:
            "Write `serial: N`: the manifest's number, which each publication must raise (a signed manifest's readers refuse a lower one).")
    var serial: Int64?

    @Option(
        name: .customLong("expires-in"),
        help: ArgumentHelp(
            "Write `expires:` this long from now (readers refuse the manifest after it).", valueName: "DURATION"))
    var expiresIn: PositiveSeconds?

    @Option(name: .shortAndLong, help: "Write the manifest to FILE instead of standard output.")
    var output: String?

    @OptionGroup(title: "Cache (with --urls)") var cache: CacheOptions

    @OptionGroup(title: "Network (with --urls)") var network: NetworkOptions

    @OptionGroup var lock: LockOptions

    /// What the command line asks for.
    private enum Source {
        case folders(baseURL: String)
        /// A folder of a listable kind (`s3://BUCKET/PREFIX/`), ending in `/`.
        case listing(String)
        /// A URL that stands for several files (an artifact's tag).
        case expanded(String)
        case urls(String)
    }

    /// The source, checked. In `run`, not `validate`: ArgumentParser reports an unknown option
    /// only after `validate` passed, and a misplaced value (`--progresss never`) would otherwise be
    /// reported as a folder that does not belong.
    private func source() throws -> Source {
        if let urls {
            guard folders.isEmpty, baseURL == nil, update == nil else {
                throw ValidationError("--urls takes no folders, no --base-url and no --update")
            }
            return .urls(urls)
        }
        if let first = folders.first, let form = URLKinds.kind(of: first)?.expandedForm {
            guard folders.count == 1, baseURL == nil, URLKinds.kind(of: first)?.problem(entry: first) == nil,
                URLKinds.kind(of: first)?.expands(first, pinned: false) == true
            else { throw ValidationError("'\(first)' is listed alone, as \(form)") }
            return .expanded(first)
        }
        if let first = folders.first, let kind = URLKinds.kind(of: first), kind.roles.contains(.listable), let form = kind.listedForm {
            guard folders.count == 1, baseURL == nil else {
                throw ValidationError("\(form) is listed alone, without folders or --base-url (the prefix is the base URL)")
            }
            // A prefix is a folder, as `aws s3 ls` and rclone take one: `s3://b/p` is `s3://b/p/`.
            let folder = first.hasSuffix("/") ? first : first + "/"
            if let problem = kind.problem(folder: folder) { throw ValidationError("'\(first)' is not \(form) (\(problem))") }
            return .listing(folder)
        }
        let listedForms = URLKinds.all.compactMap(\.listedForm)
        guard update == nil else { throw ValidationError("--update goes with \(listedForms.joined(separator: " or "))") }
        guard !folders.isEmpty else {
            throw ValidationError("give folders (with --base-url), \((listedForms + ["--urls FILE"]).joined(separator: " or "))")
        }
        guard let baseURL else { throw ValidationError("--base-url: the URL the folders are published at") }
        // A base of a kind a base_url may be, whose URLs below it are valid (a bucket S3 accepts),
        // without query or fragment.
        guard let kind = URLKinds.kind(of: baseURL), kind.roles.contains(.base),
            URLKinds.problem(prefix: baseURL, what: "--base-url", role: .base) == nil, kind.problem(entry: baseURL + "x") == nil,
            !baseURL.contains("?"), !baseURL.contains("#")
        else {
            throw ValidationError(
                "--base-url: '\(baseURL)' is not an absolute \(URLKinds.schemes(with: .base, joiner: "or")) URL without query")
        }
        return .folders(baseURL: baseURL)
    }

    func run() async throws {
        let source = try optionChecked(for: Self.self) { () throws -> Source in try self.source() }
        let fetch = try network.settings(for: Self.self)
        if let output, let problem = Self.outputProblem(output) {
            // Never over a file that is not a manifest worker wrote (a typo must not eat a source file).
            throw CommandFailure.outputRefused("-o '\(output)' \(problem); refusing to overwrite it")
        }
        if let output, access(output, F_OK) != 0, let problem = OutputGuard.folderProblem(output) {
            throw CommandFailure.outputRefused("-o '\(output)': \(problem)")
        }
        var yaml: String
        var failed = 0
        switch source {
        case .urls(let urls):
            (yaml, failed) = try await pinned(urls, fetch: fetch)
        case .listing(let folder):
            (yaml, failed) = try await listed(folder, fetch: fetch)
        case .expanded(let url):
            // Its parts (a tag's layers), each pinned by its hash.
            yaml = ManifestWriter.yaml(name: name, baseURL: nil, items: try await engine(fetch).expandedManifest(url))
        case .folders(let baseURL):
            do {
                // Keys under an s3:// base are literal: the paths are written as they are.
                let items = try ManifestWriter.scan(folders, literal: URLKinds.kind(of: baseURL)?.literalPaths == true)
                yaml = ManifestWriter.yaml(name: name, baseURL: baseURL, items: items)
            } catch {
                throw CommandFailure.badInput("\(error)")
            }
        }
        yaml = ManifestWriter.stamped(yaml, serial: serial, expires: expiresIn.map { Date().timeIntervalSince1970 + $0.value })
        if let output {
            do {
                try AtomicFile.write(Data(yaml.utf8), to: output)
            } catch {
                throw CommandFailure.outputFailed(ErrorText.describe(error))
            }
        } else {
            Console.out(yaml)
        }
        // Each URL that failed was said as the manifest was made, before the manifest itself.
        if failed > 0 { throw CommandFailure.unfinished([]) }
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
                throw CommandFailure.badInput("cannot read --urls '\(source)'")
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
        let result: (items: [ManifestWriter.Item], failed: [SyncReport.Entry])
        do {
            result = try await engine(fetch).pin(urls: urls, source: source == "-" ? "stdin" : source)
        } catch .manifest(let errors) {
            throw CommandFailure.badList(
                errors.diagnostics.map { diagnostic in
                    let line = diagnostic.line > 0 && diagnostic.line <= lineOf.count ? lineOf[diagnostic.line - 1] : diagnostic.line
                    return "\(diagnostic.path):\(line): \(diagnostic.message)"
                })
        } catch {
            throw error
        }
        for entry in result.failed {
            Console.error(TextReportWriter.failureLine(entry) + " (left out of the manifest)")
        }
        if offline {
            Console.notice("worker: --offline: pinned what the cache holds, without asking the origins whether it is current")
        }
        return (ManifestWriter.yaml(name: manifestName, baseURL: nil, items: result.items), result.failed.count)
    }

    /// The manifest's name: --name, else the output file's name.
    private var manifestName: String? {
        name ?? output.map { PathName.deletingExtension(PathName.lastComponent($0)) }
    }

    /// The engine the network sources run with: the cache, the lock, progress, the stop signals.
    private func engine(_ fetch: FetchSettings) -> SyncEngine {
        var options = SyncOptions(cacheDirectory: cache.resolved)
        options.fetch = fetch
        // What it pins seeds the tier: runners of the manifest it writes ask the tier by these hashes.
        options.fetch.remoteCache?.uploadsUnpinned = true
        options.waitLock = lock.seconds()
        options.offline = offline
        options.refresh = refresh
        let printer = ProgressPrinter(mode: progress, quiet: false)
        if let printer { options.onProgress = { printer.update($0) } }
        let stop = StopSignals.enable { message in
            printer.map { $0.note("worker: " + message) } ?? Console.notice("worker: " + message)
        }
        return SyncEngine(options: options, context: .command(stop: stop))
    }

    /// The manifest of the files below a listable kind's `folder`, and how many could not be pinned.
    private func listed(_ folder: String, fetch: FetchSettings) async throws -> (String, Int) {
        let earlier = try earlierPins(base: folder)
        let result = try await engine(fetch).folderManifest(folder, earlier: earlier)
        if let problem = result.listingFailure {
            // Nothing is written: an earlier manifest at -o stays as it is.
            throw CommandFailure.unfinished(["worker: cannot list \(folder): \(problem)"])
        }
        for entry in result.failed {
            Console.error(TextReportWriter.failureLine(entry) + " (left out of the manifest)")
        }
        for url in result.skipped.prefix(20) {
            Console.error("worker: \(url): left out: the key cannot be a file's path in a tree")
        }
        Console.notice(
            "worker manifest: \(result.listed) \(result.noun) under \(folder): \(result.unchanged) unchanged since the last run, "
                + (result.storedHashSource.map { "\(result.byChecksum) pinned by \($0), " } ?? "")
                + "\(result.byDownload) downloaded and hashed"
                + (result.failed.isEmpty ? "" : ", \(result.failed.count) failed"))
        return (ManifestWriter.yaml(name: manifestName, baseURL: folder, items: result.items), result.failed.count)
    }

    /// The pins of the earlier manifest (--update FILE, else -o FILE when worker wrote it), by
    /// absolute URL; nil when there is none.
    private func earlierPins(base: String) throws -> [String: String]? {
        let path: String
        if let update {
            path = update
        } else if let output, access(output, F_OK) == 0, Self.outputProblem(output) == nil {
            path = output
        } else {
            return nil
        }
        let set = try loadManifests([path])
        var pins: [String: String] = [:]
        for index in set.entries.indices {
            let entry = set.entries[index]
            if let hash = entry.hash, hash.algorithm == .sha256 { pins[entry.url] = hash.hex }
        }
        return pins
    }
}
