import ArgumentParser
import FoundationEssentials
import WorkerFetch

/// The shared tier (docs/REMOTE-CACHE.md): where it is, what is sent to it, whether to write.
struct RemoteCacheOptions: ParsableArguments {
    @Option(
        name: .customLong("remote-cache"),
        help: ArgumentHelp(
            "A shared cache asked before the origins for entries pinned by SHA-256 (GET/PUT URL/cas/HEX; bazel-remote, nginx WebDAV). Default: $WORKER_REMOTE_CACHE.",
            valueName: "url"))
    var url: RemoteCacheURLArgument?

    @Option(
        name: .customLong("remote-header"),
        help: ArgumentHelp(
            "A header sent to the remote cache only, 'Name: value' with ${VAR} from the environment (repeatable; never printed).",
            valueName: "header"))
    var headers: [String] = []

    @Flag(name: .customLong("remote-cache-read-only"), help: "Read from the remote cache, never upload to it.")
    var readOnly = false

    @Flag(
        name: .customLong("remote-cache-upload-private"),
        help: "Also upload bodies fetched with credentials (manifest headers, URL user info): only for a tier as private as the origins.")
    var uploadPrivate = false

    @Option(
        name: .customLong("remote-timeout"),
        help: "Seconds to connect to the remote cache, and its longest silence or crawl before the origin is asked instead.")
    var timeout: PositiveSeconds?

    @Option(name: .customLong("remote-uploads"), help: "Uploads to the remote cache in flight at once.")
    var uploads: Int?

    /// The tier's settings (nil without a URL), or a usage error naming the option.
    func settings(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> RemoteCacheSettings? {
        let given =
            url?.parsed
            ?? environment["WORKER_REMOTE_CACHE"].flatMap { $0.isEmpty ? nil : $0 }.map { variable in
                // From the environment: say so.
                RemoteCacheURL.parse(variable).mapError {
                    RemoteCacheProblem($0.message.replacing("--remote-cache:", with: "WORKER_REMOTE_CACHE:"))
                }
            }
        guard let given else {
            let stray =
                readOnly
                ? "--remote-cache-read-only"
                : uploadPrivate
                    ? "--remote-cache-upload-private"
                    : !headers.isEmpty
                        ? "--remote-header"
                        : timeout != nil ? "--remote-timeout" : uploads != nil ? "--remote-uploads" : nil
            if let stray { throw ValidationError("\(stray) needs --remote-cache (or WORKER_REMOTE_CACHE)") }
            return nil
        }
        var settings: RemoteCacheSettings
        switch given.flatMap({ RemoteCacheSettings.make(url: $0, headers: headers, environment: environment) }) {
        case .success(let made): settings = made
        case .failure(let problem): throw ValidationError(problem.message)
        }
        settings.readOnly = readOnly
        settings.uploadsPrivate = uploadPrivate
        if let timeout { settings.timeout = timeout.value }
        if let uploads {
            guard (1...256).contains(uploads) else { throw ValidationError("--remote-uploads must be between 1 and 256") }
            settings.uploadsAtOnce = uploads
        }
        return settings
    }
}
