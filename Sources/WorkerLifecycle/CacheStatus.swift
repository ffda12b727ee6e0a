import FoundationEssentials
import Glibc
import WorkerStore
import WorkerSupport

/// What `worker status` prints: the cache in numbers, the last sync of each manifest, and the
/// entries whose last sync failed.
public struct StatusReport: Sendable, Codable {
    public struct ManifestLine: Sendable, Codable {
        public let path: String
        public let name: String
        public let entries: Int
        public let lastSync: String
        /// `ok`, or `N failed`.
        public let result: String

        enum CodingKeys: String, CodingKey {
            case path, name, entries
            case lastSync = "last_sync"
            case result
        }
    }

    public var cacheDir: String
    public var entries = 0
    public var objects = 0
    public var bytes: Int64 = 0
    public var bytesSavedByDeduplication: Int64 = 0
    public var oldestEntry: String?
    public var newestEntry: String?
    public var manifests: [ManifestLine] = []
    public var failedPending = 0
    public var failures: [FailureRecord] = []
    /// Origins the last sync that tried them gave up on; the next sync probes each with one request.
    public var unhealthyOrigins: [OriginLine] = []
    /// `local`, or the network file system the cache is on (the index then journals without WAL).
    public var fileSystem = "local"

    public struct OriginLine: Sendable, Codable {
        public let origin: String
        public let since: String
        public let lastChecked: String
        public let problem: String

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
    public static func read(cacheDirectory: String) throws(CacheError) -> StatusReport {
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
            ManifestLine(
                path: run.path, name: run.name, entries: run.entries, lastSync: Timestamp.iso(run.finishedAt),
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
