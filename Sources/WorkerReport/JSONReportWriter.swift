import FoundationEssentials
import Glibc
import WorkerStore
import WorkerSupport

/// Writes the JSON report (schema 1) atomically: a temporary file renamed over the target.
public enum JSONReportWriter {
    private struct Document: Encodable {
        let schema = 1
        let workerVersion = WorkerVersion.current
        let dryRun: Bool
        let startedAt: String
        let finishedAt: String
        let durationSeconds: Double
        let cacheDir: String
        let manifests: [SyncReport.ManifestSummary]
        let totals: SyncReport.Totals
        let entries: [SyncReport.Entry]
        let unreachableOrigins: [SyncReport.OriginProblem]?
        let limits: SyncReport.Limits?
        let remoteCache: SyncReport.RemoteCache?
        let tree: TreeOutcome?

        enum CodingKeys: String, CodingKey {
            case schema
            case workerVersion = "worker_version"
            case dryRun = "dry_run"
            case startedAt = "started_at"
            case finishedAt = "finished_at"
            case durationSeconds = "duration_seconds"
            case cacheDir = "cache_dir"
            case manifests, totals, entries
            case unreachableOrigins = "unreachable_origins"
            case limits
            case remoteCache = "remote_cache"
            case tree
        }
    }

    public static func data(_ report: SyncReport) throws -> Data {
        let format = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        let document = Document(
            dryRun: report.dryRun,
            startedAt: report.startedAt.formatted(format),
            finishedAt: report.finishedAt.formatted(format),
            durationSeconds: (report.duration * 1000).rounded() / 1000,
            cacheDir: report.cacheDirectory,
            manifests: report.manifests,
            totals: report.totals,
            entries: report.entries,
            unreachableOrigins: report.unreachableOrigins.isEmpty ? nil : report.unreachableOrigins,
            limits: report.limits,
            remoteCache: report.remoteCache,
            tree: report.tree
        )
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(document)
    }

    public static func write(_ report: SyncReport, to path: String) throws {
        try AtomicFile.write(data(report), to: path)
    }
}

/// Writes a file by way of a temporary sibling and a rename, so readers never see half of it.
/// The sibling has a random name and is created exclusively without following links
/// (`mkstemp`'s rules): someone who can write the folder cannot aim the write elsewhere by
/// planting a symlink under a name they guessed.
public enum AtomicFile {
    public static func write(_ data: Data, to path: String) throws {
        let url = URL(fileURLWithPath: path)
        let folder = url.deletingLastPathComponent().path
        var created: (fd: Int32, path: String)?
        for _ in 0..<16 {
            let candidate = folder + "/." + url.lastPathComponent + "." + randomSuffix() + ".tmp"
            let fd = open(candidate, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o666)
            if fd >= 0 { created = (fd, candidate); break }
            guard errno == EEXIST else { throw failure(path, errno) }
        }
        guard let (fd, temporary) = created else { throw failure(path, EEXIST) }
        let written = data.withUnsafeBytes { FileChunks.writeAll(fd, $0) }
        let code = errno
        close(fd)
        guard written else {
            unlink(temporary)
            throw failure(path, code)
        }
        guard rename(temporary, url.path) == 0 else {
            let code = errno
            unlink(temporary)
            throw failure(path, code)
        }
    }

    /// Appends `data` to the existing file at `path` (GitHub's step summary, which the runner made).
    public static func append(_ data: Data, to path: String) throws {
        let fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC)
        guard fd >= 0 else { throw failure(path, errno) }
        let written = data.withUnsafeBytes { FileChunks.writeAll(fd, $0) }
        let code = errno
        guard close(fd) == 0, written else { throw failure(path, written ? errno : code) }
    }

    private static func randomSuffix() -> String {
        var generator = SystemRandomNumberGenerator()
        return String(generator.next() as UInt64, radix: 36)
    }

    private static func failure(_ path: String, _ code: Int32) -> CocoaError {
        CocoaError(.fileWriteUnknown, userInfo: ["NSLocalizedDescription": "cannot write \(path): \(String(cString: strerror(code)))"])
    }
}
