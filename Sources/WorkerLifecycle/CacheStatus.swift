import FoundationEssentials
import Glibc
import WorkerStore
import WorkerSupport

/// What `worker status` prints: the cache in numbers, the last sync of each manifest, and the
/// entries whose last sync failed.
package struct StatusReport: Sendable, Codable {
    package struct ManifestLine: Sendable, Codable {
        package let path: String
        package let name: String
        package let entries: Int
        package let lastSync: String
        /// `ok`, or `N failed`.
        package let result: String

        enum CodingKeys: String, CodingKey {
            case path, name, entries
            case lastSync = "last_sync"
            case result
        }
    }

    package var cacheDir: String
    package var entries = 0
    package var objects = 0
    package var bytes: Int64 = 0
    package var bytesSavedByDeduplication: Int64 = 0
    package var oldestEntry: String?
    package var newestEntry: String?
    package var manifests: [ManifestLine] = []
    package var failedPending = 0
    package var failures: [FailureRecord] = []
    /// Origins the last sync that tried them gave up on; the next sync probes each with one request.
    package var unhealthyOrigins: [OriginLine] = []
    /// `local`, or the network file system the cache is on (the index then journals without WAL).
    package var fileSystem = "local"

    package struct OriginLine: Sendable, Codable {
        package let origin: String
        package let since: String
        package let lastChecked: String
        package let problem: String

        enum CodingKeys: String, CodingKey {
            case origin, since, problem
            case lastChecked = "last_checked"
        }
    }

    enum CodingKeys: String, CodingKey {
        case cacheDir = "cache_dir"
        case entries, objects, bytes
        case bytesSavedByDeduplication = "bytes_saved_by_deduplication"
        case oldestEntry = "oldest_entry"
        case newestEntry = "newest_entry"
        case manifests
        case failedPending = "failed_pending"
        case failures
        case unhealthyOrigins = "unhealthy_origins"
        case fileSystem = "file_system"
    }

    /// Reads the index (read-only: it works while syncs write, and in a cache this user may only
    /// read); a cache that does not exist yet is an empty report. Takes no lock.
    package static func read(cacheDirectory: String) throws(CacheError) -> StatusReport {
        var report = StatusReport(cacheDir: cacheDirectory)
        let path = CacheLayout.indexPath(cacheDirectory)
        guard access(path, F_OK) == 0 else { return report }
        let index = try CacheIndex(path: path, create: false, readOnly: true)
        let numbers = try index.statistics()
        report.entries = numbers.entries
        report.objects = numbers.objects
        report.bytes = numbers.objectBytes
        report.bytesSavedByDeduplication = numbers.entryBytes - numbers.objectBytes
        report.oldestEntry = numbers.oldestFetch.map(Timestamp.iso)
        report.newestEntry = numbers.newestFetch.map(Timestamp.iso)
        report.manifests = try index.manifestRuns().map { run in
            ManifestLine(path: run.path, name: run.name, entries: run.entries, lastSync: Timestamp.iso(run.finishedAt),
                         result: run.failed == 0 ? "ok" : "\(run.failed) failed")
        }
        report.failures = try index.failures().map { failure in
            var redacted = failure
            redacted.url = Redact.url(failure.url)
            return redacted
        }
        report.failedPending = numbers.pendingFailures
        report.unhealthyOrigins = try index.unhealthyOrigins().map {
            OriginLine(origin: $0.origin, since: Timestamp.iso($0.since), lastChecked: Timestamp.iso($0.checked), problem: $0.problem)
        }
        if case .network(let name) = index.fileSystem { report.fileSystem = "network (\(name))" }
        return report
    }
}
