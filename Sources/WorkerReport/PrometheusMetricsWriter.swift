import FoundationEssentials
import Glibc
import WorkerFetch
import WorkerSupport

/// Prometheus text format for node_exporter's textfile collector: when the last run finished,
/// whether it succeeded, entries by status, bytes, duration. Written atomically by the caller.
public struct PrometheusMetricsWriter: ReportFormat {
    public init() {}

    public var option: String { "--metrics" }

    public func recognizes(_ head: String) -> Bool {
        head.hasPrefix("# HELP worker_")
    }

    /// Totals only.
    public var rows: ReportRowNeeds { [] }

    public func data(_ report: SyncReport, success: Bool) throws -> Data {
        Data(Self.text(report, success: success).utf8)
    }

    public static func text(_ report: SyncReport, success: Bool) -> String {
        let manifests = report.manifests.map(\.name).joined(separator: ",")
        let labels = #"manifests="\#(escape(manifests))""#
        var lines: [String] = []
        func metric(_ name: String, _ help: String, _ type: String, _ samples: [(String, String)]) {
            lines.append("# HELP \(name) \(help)")
            lines.append("# TYPE \(name) \(type)")
            for (extra, value) in samples {
                lines.append("\(name){\(labels)\(extra.isEmpty ? "" : "," + extra)} \(value)")
            }
        }
        metric(
            "worker_build_info", "The worker version that wrote these metrics.", "gauge",
            [(#"version="\#(escape(WorkerVersion.current))""#, "1")])
        if let rate = report.limits?.limitRate {
            metric(
                "worker_sync_limit_rate_bytes_per_second", "--limit-rate: body bytes per second for the whole run.", "gauge",
                [("", "\(rate)")])
        }
        if let rps = report.limits?.maxRequestsPerSecond {
            metric(
                "worker_sync_max_requests_per_second", "--max-rps: requests per second to each origin.", "gauge",
                [("", Text.format("%g", rps))])
        }
        metric(
            "worker_sync_last_run_timestamp_seconds", "When the last sync finished (Unix time).", "gauge",
            [("", Text.format("%.3f", report.finishedAt.timeIntervalSince1970))])
        metric("worker_sync_success", "1 if the last sync ended with exit code 0.", "gauge", [("", success ? "1" : "0")])
        metric("worker_sync_duration_seconds", "How long the last sync took.", "gauge", [("", Text.format("%.3f", report.duration))])
        let totals = report.totals
        metric(
            "worker_sync_entries", "Entries of the last sync by status.", "gauge",
            [
                (#"status="unchanged""#, "\(totals.unchanged)"), (#"status="added""#, "\(totals.added)"),
                (#"status="updated""#, "\(totals.updated)"), (#"status="reused""#, "\(totals.reused)"),
                (#"status="failed""#, "\(totals.failed)"), (#"status="removed""#, "\(totals.removed)"),
            ])
        if !report.failover.isEmpty {
            var byReason: [String: Int] = [:]
            for failover in report.failover { byReason[failover.reason.rawValue, default: 0] += failover.entries }
            metric(
                "worker_sync_failover_entries", "Entries a mirror served because their own URL failed, by reason (last sync).",
                "gauge", byReason.sorted { $0.key < $1.key }.map { (#"reason="\#($0.key)""#, "\($0.value)") })
        }
        metric("worker_sync_bytes_downloaded", "Body bytes received by the last sync.", "gauge", [("", "\(totals.bytesDownloaded)")])
        if let remote = report.remoteCache {
            let tier = #"remote_cache="\#(escape(remote.url))""#
            for (name, help, value) in [
                ("hits", "Bodies the last sync took from the remote cache.", Int64(remote.hits)),
                ("misses", "Lookups the remote cache did not have.", Int64(remote.misses)),
                ("corrupt", "Remote cache bodies that failed their hash or were cut (discarded).", Int64(remote.corrupt)),
                ("errors", "Remote cache lookups that failed (refused, timeout, error status).", Int64(remote.errors)),
                ("uploads", "Bodies uploaded to the remote cache.", Int64(remote.uploads)),
                ("upload_errors", "Uploads to the remote cache that failed.", Int64(remote.uploadErrors)),
                ("uploads_not_done", "Uploads cut short by a deadline or a signal.", Int64(remote.uploadsNotDone)),
                ("private_not_uploaded", "Bodies fetched with credentials, kept off the tier.", Int64(remote.privateNotUploaded)),
                ("bytes_down", "Body bytes received from the remote cache.", remote.bytesDown),
                ("bytes_up", "Body bytes uploaded to the remote cache.", remote.bytesUp),
            ] {
                metric("worker_remote_cache_\(name)", help + " (last sync)", "gauge", [(tier, "\(value)")])
            }
            metric(
                "worker_remote_cache_given_up", "1 if the last sync stopped asking the remote cache after errors.", "gauge",
                [(tier, remote.givenUp == nil ? "0" : "1")])
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func escape(_ value: String) -> String {
        Text.escaping(value) {
            $0 == "\\" ? "\\\\" : $0 == "\"" ? "\\\"" : $0 == "\n" ? "\\n" : Sanitize.isUnsafeForTerminal($0) ? "?" : nil
        }
    }
}
