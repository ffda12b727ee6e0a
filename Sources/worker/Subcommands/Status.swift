import ArgumentParser
import FoundationEssentials
import Glibc
import WorkerLifecycle
import WorkerStore
import WorkerSupport

/// `worker status`: the cache in numbers, the last sync of each manifest, pending failures.
struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show entries, objects, bytes, deduplication, and the last sync of each manifest.",
        discussion: """
            Also lists entries whose last sync failed and origins a sync gave up on (the next sync \
            probes each with one request first).

            Examples:
              worker status
              worker status --json | jq .failed_pending
              worker status --cache-dir /var/cache/worker
            """)

    @OptionGroup(title: "Cache") var cache: CacheOptions

    @Flag(help: "Print JSON instead of text.")
    var json = false

    func run() async throws {
        let cacheDirectory = try cache.existing()
        let report: StatusReport
        do {
            report = try StatusReport.read(cacheDirectory: cacheDirectory)
        } catch {
            throw error
        }
        if json {
            Console.out(String(decoding: try Console.json(report), as: UTF8.self) + "\n")
            return
        }
        var lines = [
            "cache      \(report.cacheDir)",
            "entries    \(report.entries) (URLs with a verified file in the cache)",
            "objects    \(report.objects) (distinct files, \(Units.formatBytes(report.bytes)); deduplication saves \(Units.formatBytes(report.bytesSavedByDeduplication)))",
        ]
        if let oldest = report.oldestEntry, let newest = report.newestEntry {
            lines.append("fetched    oldest \(oldest), newest \(newest)")
        }
        for manifest in report.manifests {
            lines.append(
                "manifest   \(Sanitize.terminal(manifest.name)): \(manifest.entries) entries, last sync \(manifest.lastSync), "
                    + "\(manifest.result) (\(Sanitize.terminal(manifest.path)))")
        }
        for origin in report.unhealthyOrigins {
            lines.append(
                "unhealthy  \(origin.origin) since \(origin.since): \(origin.problem) (last tried \(origin.lastChecked); the next sync probes it first)"
            )
        }
        if report.fileSystem != "local" {
            lines.append("filesystem \(report.fileSystem): the index uses a rollback journal (no WAL)")
        }
        lines.append(
            "failed     \(report.failedPending) entr\(report.failedPending == 1 ? "y" : "ies") pending"
                + (report.failedPending == 0
                    ? ""
                    : " (the last attempt failed and none has succeeded since; cleared when the URL "
                        + "is fetched or by `worker rm URL`)"))
        for failure in report.failures.prefix(20) {
            let note = failure.getOnly ? " (only `worker get` asked for it: forgotten a day after the attempt)" : ""
            lines.append("  \(failure.url): \(failure.reason): \(failure.error)\(note)")
        }
        if report.failures.count > 20 { lines.append("  … and \(report.failures.count - 20) more (--json lists them all)") }
        Console.out(lines.joined(separator: "\n") + "\n")
    }
}
