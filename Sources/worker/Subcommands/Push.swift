import ArgumentParser
import CurlTransport
import FoundationEssentials
import Glibc
import WorkerFetch
import WorkerLifecycle
import WorkerStore
import WorkerSupport
import WorkerSync

/// `worker push --remote-cache URL`: seed a shared tier with a cache's objects.
struct Push: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Upload every object of the cache that the remote cache lacks (HEAD, then PUT URL/cas/HEX).",
        discussion: """
            Seeds a shared tier (docs/REMOTE-CACHE.md) from a cache that is already full. Reads the \
            cache only. Exit 1 when an object could not be uploaded.

            Examples:
              worker push --remote-cache http://bazel-remote.internal:8080
              WORKER_REMOTE_CACHE=https://cache.example.com/team worker push --remote-header 'Authorization: Bearer ${CACHE_TOKEN}'
            """)

    @OptionGroup(title: "Cache") var cache: CacheOptions

    @OptionGroup(title: "Remote cache") var remote: RemoteCacheOptions

    @Option(name: .customLong("ca-cert"), help: "A PEM file of certificate authorities to trust besides the system's (repeatable).")
    var caCertificates: [String] = []

    @Option(name: .customLong("progress"), help: "auto (on a terminal, or a line every 5 s elsewhere), always or never.")
    var progress = ProgressPrinter.Mode.auto

    @Flag(name: .shortAndLong, help: "Only errors.")
    var quiet = false

    func validate() throws {
        if remote.readOnly { throw ValidationError("--remote-cache-read-only: push writes to the remote cache") }
    }

    func run() async throws {
        let tier = try optionChecked(for: Self.self) { () throws -> RemoteCacheSettings in
            guard let tier = try remote.settings() else { throw ValidationError("push needs --remote-cache (or WORKER_REMOTE_CACHE)") }
            for file in caCertificates where access(file, R_OK) != 0 {
                throw ValidationError("--ca-cert: cannot read '\(file)'")
            }
            return tier
        }
        let directory = try cache.existing()
        var settings = FetchSettings()
        settings.transport = CurlTransport()
        settings.caCertificates = caCertificates
        settings.remoteCache = tier
        let printer = ProgressPrinter(mode: progress, quiet: quiet)
        let stop = StopSignals.enable { message in
            printer.map { $0.note("worker: " + message) } ?? Console.notice("worker: " + message)
        }
        defer { printer?.stop() }
        let push = RemotePush(cacheDirectory: directory, settings: settings, context: .command(stop: stop))
        var onProgress: (@Sendable (SyncProgress) -> Void)?
        if let printer { onProgress = { printer.update($0) } }
        let result: RemotePush.Result
        do throws(PushFailure) {
            result = try await push.run(onProgress: onProgress)
        } catch {
            throw error
        }
        printer?.stop()
        let counts = result.counts
        let shown = settings.remoteCache?.shownURL ?? ""
        if !quiet {
            var line =
                "worker push: \(result.objects) objects to \(shown): \(counts.uploads) uploaded "
                + "(\(Units.formatBytes(counts.bytesUp))), \(counts.present) already there"
            let ended = counts.present + counts.uploads + counts.uploadErrors + counts.errors + counts.uploadsNotDone
            let trouble = [
                (counts.uploadErrors + counts.errors, "failed"), (counts.uploadsNotDone, "cut short"),
                (result.damaged.count, "damaged (run worker verify --repair)"),
                (counts.privateNotUploaded, "private (fetched with credentials) kept local"),
                (result.objects - ended - result.damaged.count - counts.privateNotUploaded, "not tried"),
            ]
            .filter { $0.0 > 0 }
            for (count, what) in trouble { line += ", \(count) \(what)" }
            Console.out(line + "\n")
        }
        let givenUp = counts.givenUp.map {
            "worker push: stopped after errors in a row from \(shown): \(Sanitize.terminal($0, limit: 200))"
        }
        if !result.complete { throw CommandFailure.unfinished(givenUp.map { [$0] } ?? []) }
        if let givenUp { Console.error(givenUp) }
    }
}
