import Foundation

/// Writes the JSON report (schema 1) atomically: a temporary file renamed over the target.
public enum JSONReportWriter {
    private struct Document: Encodable {
        let schema = 1
        let dryRun: Bool
        let startedAt: String
        let finishedAt: String
        let durationSeconds: Double
        let cacheDir: String
        let manifests: [SyncReport.ManifestSummary]
        let totals: SyncReport.Totals
        let entries: [SyncReport.Entry]

        enum CodingKeys: String, CodingKey {
            case schema
            case dryRun = "dry_run"
            case startedAt = "started_at"
            case finishedAt = "finished_at"
            case durationSeconds = "duration_seconds"
            case cacheDir = "cache_dir"
            case manifests, totals, entries
        }
    }

    public static func data(_ report: SyncReport) throws -> Data {
        let format = ISO8601DateFormatter()
        format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let document = Document(
            dryRun: report.dryRun,
            startedAt: format.string(from: report.startedAt),
            finishedAt: format.string(from: report.finishedAt),
            durationSeconds: (report.duration * 1000).rounded() / 1000,
            cacheDir: report.cacheDirectory,
            manifests: report.manifests,
            totals: report.totals,
            entries: report.entries
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
public enum AtomicFile {
    public static func write(_ data: Data, to path: String) throws {
        let url = URL(fileURLWithPath: path)
        let temporary = url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).\(getpid()).tmp")
        try data.write(to: temporary)
        guard rename(temporary.path, url.path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary.path)
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "cannot write \(path): \(reason)"])
        }
    }
}
