import FoundationEssentials
import Glibc
import WorkerFetch
import WorkerPlan
import WorkerStore
import WorkerSupport

/// The human summary: counts, bytes and time on stdout; failed entries with reasons on stderr.
public struct TextReportWriter {
    /// Changed entries listed on stdout before the rest is summed up as "… and N more".
    public var listLimit = 20
    /// Failed entries listed one a line on stderr (a handful); the rest are counted (the report
    /// has them all).
    var failureLimit = 5

    public init() {}

    /// The tree `--tree` published, or would publish.
    static func treeLine(_ tree: TreeOutcome, dryRun: Bool) -> String {
        let counts = "\(tree.files) files" + (tree.missing > 0 ? ", \(tree.missing) not in the cache" : "")
        if let error = tree.error { return "  tree \(tree.path): not published (\(Sanitize.terminal(error)))" }
        if tree.stopped {
            return "  tree \(tree.path): not switched: the run was stopped with \(tree.missing) entries not done"
                + (tree.version.isEmpty ? "; nothing is published yet" : "; \(tree.version) stays")
        }
        if tree.withheld {
            return "  tree \(tree.path): not switched: \(tree.missing) of \(tree.files + tree.missing) entries are not in the cache "
                + "(--tree-complete)" + (tree.version.isEmpty ? "; nothing is published yet" : "; \(tree.version) stays")
        }
        if dryRun {
            return "  tree \(tree.path): " + (tree.switched ? "would switch to a new version" : "unchanged") + " (\(counts))"
        }
        guard tree.switched else { return "  tree \(tree.path): unchanged, nothing switched (\(counts))" }
        let made = tree.copied > 0 ? "\(tree.linked) linked, \(tree.copied) copied" : "\(tree.linked) linked"
        let partial = tree.missing > 0 ? "; a partial tree: \(tree.missing) entries missing (--tree-complete waits for all)" : ""
        return "  tree \(tree.path): switched to \(tree.version) (\(counts); \(made))\(partial)"
    }

    public func summary(_ report: SyncReport) -> String {
        let totals = report.totals
        let count = report.manifests.count
        // One line each: a name with a line break must not add a line (a CI runner's commands, a forged summary).
        let names = report.manifests.map { Sanitize.terminal($0.name) }.joined(separator: ", ")
        var lines: [String] = []
        let verb = report.dryRun ? "plan" : "sync"
        lines.append(
            "worker \(verb): \(totals.entries) entries from \(count) manifest\(count == 1 ? "" : "s") (\(names)), cache \(report.cacheDirectory)"
        )
        let listed = report.entries.with { $0 != .failed && $0 != .unchanged }
        for entry in listed.prefix(listLimit) {
            let label = report.dryRun ? Self.plannedLabel(entry.status) : entry.status.rawValue
            var line = "  \(pad(label))  \(entry.url)"
            if let bytes = entry.bytes, !report.dryRun {
                line +=
                    "  (\(Units.formatBytes(bytes))\(entry.source == .remote ? ", from the remote cache" : "")"
                    + "\(entry.servedBy.map { ", from " + Sanitize.terminal($0) } ?? ""))"
            }
            lines.append(line)
        }
        let changed = totals.added + totals.updated + totals.reused + totals.removed
        let shown = min(listed.count, listLimit)
        if changed > shown {
            lines.append("  … and \(changed - shown) more (--report FILE lists them all)")
        }
        var counts =
            "  \(report.dryRun ? "to add" : "added") \(totals.added), \(report.dryRun ? "to update" : "updated") \(totals.updated), "
            + "\(report.dryRun ? "to reuse" : "reused") \(totals.reused), unchanged \(totals.unchanged)"
        if !report.dryRun { counts += ", failed \(totals.failed)" }
        if totals.refreshed > 0 { counts += ", refreshed \(totals.refreshed)" }
        if totals.repaired > 0 { counts += " (\(totals.repaired) changed on disk, fetched again)" }
        if totals.removed > 0 { counts += ", \(report.dryRun ? "to remove" : "removed") \(totals.removed)" }
        lines.append(counts)
        if let tree = report.tree { lines.append(Self.treeLine(tree, dryRun: report.dryRun)) }
        if report.pruneWaiting > 0 {
            lines.append(
                "  \(report.pruneWaiting) unnamed entr\(report.pruneWaiting == 1 ? "y waits" : "ies wait") for the --prune-after grace period"
            )
        } else if report.orphans > 0, totals.removed == 0 {
            lines.append(
                "  \(report.orphans) cached entr\(report.orphans == 1 ? "y is" : "ies are") named by no given manifest (--prune removes them)"
            )
        }
        if !report.dryRun {
            let seconds = max(report.duration, 0.000_001)
            let rate = Double(totals.bytesDownloaded) / seconds
            lines.append(
                "  downloaded \(Units.formatBytes(totals.bytesDownloaded)) in \(Text.format("%.2f", report.duration)) s "
                    + "(\(Units.formatBytes(Checked.int64(rate) ?? 0))/s)")
        }
        if let remote = report.remoteCache { lines.append(Self.remoteLine(remote)) }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Where bytes came from: the tier's hits and what it was given.
    static func remoteLine(_ remote: SyncReport.RemoteCache) -> String {
        var line =
            "  remote cache \(remote.url): \(remote.hits) hit\(remote.hits == 1 ? "" : "s") "
            + "(\(Units.formatBytes(remote.bytesDown))), \(remote.misses) miss\(remote.misses == 1 ? "" : "es")"
        if !remote.readOnly { line += ", \(remote.uploads) uploaded (\(Units.formatBytes(remote.bytesUp)))" }
        let trouble = [
            (remote.corrupt, "corrupt"), (remote.errors, "errors"), (remote.uploadErrors, "upload errors"),
            (remote.uploadsNotDone, "uploads not done"),
            (remote.privateNotUploaded, "private (fetched with credentials) not uploaded"),
        ].filter { $0.0 > 0 }
        for (count, what) in trouble { line += ", \(count) \(what)" }
        if let givenUp = remote.givenUp { line += "; given up after errors (\(Sanitize.terminal(givenUp, limit: 120)))" }
        return line
    }

    /// For stderr: a line per origin given up, then failed entries one a line, at most
    /// `failureLimit`, then how many more; empty when none failed.
    public func failures(_ report: SyncReport, reportPath: String? = nil) -> String {
        failureLines(report, reportPath: reportPath).map { $0 + "\n" }.joined()
    }

    /// The lines of `failures`, one message each (for `--log-format json`).
    public func failureLines(_ report: SyncReport, reportPath: String? = nil) -> [String] {
        let failed = report.failedEntries
        var lines = report.failover.map(Self.failoverLine)
        guard !failed.isEmpty || report.pruneRefused != nil else { return lines }
        for origin in report.unreachableOrigins {
            lines.append(
                "origin unreachable: \(origin.origin): \(origin.problem); \(origin.failed) entr\(origin.failed == 1 ? "y" : "ies") "
                    + "failed, \(origin.notTried) not tried (since \(origin.since))")
        }
        for entry in failed.prefix(failureLimit) {
            lines.append(Self.failureLine(entry))
        }
        if failed.count > failureLimit {
            let see = reportPath == nil ? "see the report: --report FILE lists them all" : "see the report"
            lines.append("… and \(failed.count - failureLimit) more (\(see))")
        }
        if let refused = report.pruneRefused { lines.append("prune: \(refused)") }
        return lines
    }

    /// "warning: 412 entries from https://cdn…: s3://assets answered HTTP 403 (signed with …)".
    static func failoverLine(_ failover: SyncReport.Failover) -> String {
        let mirrors = failover.servedBy.prefix(2).joined(separator: ", ") + (failover.servedBy.count > 2 ? ", …" : "")
        let entries = "\(failover.entries) entr\(failover.entries == 1 ? "y" : "ies")"
        let what = failover.httpStatus == nil ? "failed: " : "answered "
        return "warning: failover: \(entries) from \(mirrors): \(failover.origin) \(what)\(Sanitize.terminal(failover.error))"
    }

    public static func failureLine(_ entry: SyncReport.Entry) -> String {
        let reason = entry.reason?.rawValue ?? "failed"
        var line = "failed: \(entry.url): \(reason): \(entry.error ?? "")"
        if let attempts = entry.attempts, attempts > 1 { line += " (\(attempts) attempts)" }
        if entry.stale == true { line += " [\(staleNote(entry))]" }
        return line
    }

    /// What a plan says it would do: `add`, `update`, `reuse`, `remove`.
    static func plannedLabel(_ status: EntryStatus) -> String {
        switch status {
        case .added: "add"
        case .updated: "update"
        case .reused: "reuse"
        case .removed: "remove"
        case .unchanged: "keep"
        case .failed: "fail"
        }
    }

    private func pad(_ text: String) -> String {
        text.count >= 9 ? text : text + String(repeating: " ", count: 9 - text.count)
    }

    /// What a failed entry still serves: the version in the cache, named by its SHA-256 (which
    /// may be newer than the one this manifest asks for: another manifest's).
    static func staleNote(_ entry: SyncReport.Entry) -> String {
        let object = entry.previousPath.map { String($0.split(separator: "/").last ?? "") }
        guard let object, Hex.isLowercaseHex(object, length: 64) else { return "the cached version stays" }
        return "the cached version (sha256:\(object.prefix(12))…) stays"
    }
}
