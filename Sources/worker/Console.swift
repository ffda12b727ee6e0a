import ArgumentParser
import CurlTransport
import FoundationEssentials
import Glibc
import Logging
import Synchronization
import WorkerFetch
import WorkerManifest
import WorkerReport
import WorkerStore
import WorkerSupport
import WorkerSync

/// Prints to stdout/stderr without buffering surprises between the two. With `--log-format
/// json` every stderr line is one JSON object (time, level, message, and any fields given).
enum Console {
    /// `--log-format json` was given: said by the command once it is parsed (`decide`), else read
    /// from the command line as it is (`Invocation`), so that even a usage error is a JSON line
    /// when asked for.
    static var jsonLines: Bool {
        decided.withLock { $0 } ?? (Invocation.current?.logFormat == .json)
    }

    /// nil until `decide`, then whether the lines are JSON.
    private static let decided = Mutex<Bool?>(nil)

    /// The log format of the command parsed, before it runs.
    static func decide(json: Bool) {
        decided.withLock { $0 = json }
    }

    /// The JSON style of every command's output: indented, sorted keys, slashes as they are.
    static func json(_ value: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return escapingControls(try encoder.encode(value))
    }

    /// Text for standard output: control characters from manifests, servers or the cache's
    /// files never reach the terminal (`Sanitize.terminalLines`).
    static func out(_ text: String) {
        guard !text.isEmpty else { return }
        write(1, Data(Sanitize.terminalLines(text).utf8))
    }

    /// Writes `text` to stderr, a line at a time (as JSON objects at `level` when asked).
    static func error(_ text: String, level: String = "error", fields: [String: String] = [:]) {
        guard !text.isEmpty else { return }
        guard jsonLines else {
            let clean = Sanitize.terminalLines(text)
            write(2, Data((clean.hasSuffix("\n") ? clean : clean + "\n").utf8))
            return
        }
        var out = Data()
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            out += jsonLine(level: level, message: String(line), fields: fields)
        }
        write(2, out)
    }

    /// Writes all of `data` to descriptor `fd` (1 or 2), unbuffered, as the lines are made.
    static func write(_ fd: Int32, _ data: Data) {
        _ = data.withUnsafeBytes { FileChunks.writeAll(fd, $0) }
    }

    /// Everything on standard input, to its end.
    static func readStandardInput() -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(0, &buffer, buffer.count)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return data }
            data.append(contentsOf: buffer[..<count])
        }
    }

    /// A notice on stderr (waiting for a lock, progress): level `info` in JSON.
    static func notice(_ text: String, fields: [String: String] = [:]) {
        error(text, level: "info", fields: fields)
    }

    static func jsonLine(level: String, message: String, fields: [String: String] = [:]) -> Data {
        var object: [String: String] = fields
        object["time"] = Date().formatted(Date.ISO8601FormatStyle())
        object["level"] = level
        object["logger"] = "worker"
        object["message"] = message
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(object)) ?? Data("{}".utf8)
        return escapingControls(data) + Data("\n".utf8)
    }

    /// JSON text with DEL and the C1 controls (U+007F–U+009F), which JSON allows raw, written as
    /// `\u` escapes too (the encoder escapes C0): a terminal showing the line acts on none of them.
    static func escapingControls(_ json: Data) -> Data {
        guard json.contains(0x7f) || json.contains(0xc2) else { return json }
        var out = Data()
        out.reserveCapacity(json.count)
        var index = json.startIndex
        while index < json.endIndex {
            let byte = json[index]
            if byte == 0x7f {
                out += Data("\\u007f".utf8)
            } else if byte == 0xc2, index + 1 < json.endIndex, (0x80...0x9f).contains(json[index + 1]) {
                out += Data("\\u00\(String(json[index + 1], radix: 16))".utf8)
                index += 1
            } else {
                out.append(byte)
            }
            index += 1
        }
        return out
    }
}

/// Ends the run with exit 4 when `directory` holds no cache: commands that only read or tidy a
/// cache never create one, and a mistyped --cache-dir is named instead of shown as empty.
func requireCache(_ directory: String) throws(CommandFailure) {
    guard access(CacheLayout.indexPath(directory), F_OK) == 0 else {
        let code = errno
        var info = stat()
        if code != ENOENT && code != ENOTDIR, stat(directory, &info) == 0 {
            // There is a folder, but this user may not look into it: say so, not "no cache".
            throw .noCache(
                directory: directory,
                reason: "\(String(cString: strerror(code))) "
                    + "(\(CacheAccess.owner(info)); this is \(CacheAccess.currentUser()))")
        }
        throw .noCache(directory: directory, reason: nil)
    }
}

/// Ends the run with exit 2 when an output would overwrite a manifest or a file it did not write.
func checkOutputs(_ outputs: [(format: any OutputFormat, path: String)], manifests: [String]) throws(CommandFailure) {
    if let problem = OutputGuard.problem(outputs: outputs, manifests: manifests) {
        throw .outputRefused(problem)
    }
}

/// Loads manifests or ends the run with exit 2 and every located problem on stderr.
func loadManifests(_ paths: [String], tree: Bool = false) throws(ManifestErrors) -> ManifestSet {
    var loader = ManifestLoader()
    loader.collectsTree = tree
    return try loader.load(paths: paths)
}

/// Manifests by path or URL for a command that reads them (`export`, `verify --repair`): remote
/// ones fetched through the cache, signatures checked, serial and expiry checked; exit 2 (or 3
/// when a remote one cannot be had) as a sync would.
func openManifests(
    _ arguments: [String], cacheDirectory: String, trust: ManifestTrust, fetch: FetchSettings, tree: Bool = false,
    expandsHeaders: Bool = true
) async throws(SyncFailure) -> (set: ManifestSet, opened: OpenedManifests) {
    var options = SyncOptions(cacheDirectory: cacheDirectory)
    options.trust = trust
    options.mayCreateCache = false
    options.fetch = fetch
    return try await SyncEngine(options: options, context: .command()).openAndLoad(
        arguments, collectsTree: tree,
        expandsHeaders: expandsHeaders)
}

extension RunContext {
    /// A command's context: waits for another run's lock said on stderr, the command's logger,
    /// and the stop request its signal handler makes (none for commands that end at a signal).
    static func command(logger: Logger = Logger(label: "worker"), stop: StopRequest = StopRequest()) -> RunContext {
        RunContext(logger: logger, lockNotice: { Console.notice($0) }, stop: stop)
    }
}
