import FoundationEssentials
import Glibc
import WorkerSupport

/// What `worker status` reads and each run records for it: counts, failures pending, the last
/// sync of each manifest, origins found down. Part of `CacheIndex` (all SQL stays in this type).
extension CacheIndex {
    /// Counts for `worker status`.
    public func statistics() throws(CacheError) -> CacheStatistics {
        try wrap {
            // A remote manifest's and its signature's rows are the cache's, not entries.
            let entries =
                try Self.hasTable(database, "manifest_documents")
                ? "entries WHERE url NOT IN (SELECT url FROM manifest_documents)" : "entries"
            let totals = try database.prepare(
                """
                SELECT count(*), count(DISTINCT object), total(size), min(fetched_at), max(fetched_at)
                FROM \(entries)
                """)
            _ = try totals.step()
            let distinct = try database.prepare(
                "SELECT total(size) FROM (SELECT max(size) AS size FROM \(entries) GROUP BY object)")
            _ = try distinct.step()
            let failed = try database.prepare("SELECT count(*) FROM failures\(try pendingFilter())")
            _ = try failed.step()
            return CacheStatistics(
                entries: Int(totals.int(0)), objects: Int(totals.int(1)),
                // total(): a sum as a double, which a tampered size column cannot overflow.
                entryBytes: Checked.int64(totals.double(2)) ?? Int64.max, objectBytes: Checked.int64(distinct.double(0)) ?? Int64.max,
                oldestFetch: totals.isNull(3) ? nil : totals.double(3),
                newestFetch: totals.isNull(4) ? nil : totals.double(4),
                pendingFailures: Int(failed.int(0)))
        }
    }

    /// Entries whose last sync failed and that have not succeeded since.
    public func failures() throws(CacheError) -> [FailureRecord] {
        try wrap {
            let getOnly = try Self.hasColumn(database, "failures", "get_only") ? "get_only" : "0"
            let statement = try database.prepare(
                "SELECT url, reason, error, attempts, at, \(getOnly) FROM failures\(try pendingFilter()) ORDER BY url")
            var rows: [FailureRecord] = []
            while try statement.step() {
                rows.append(
                    FailureRecord(
                        url: statement.text(0) ?? "", reason: statement.text(1) ?? "",
                        error: statement.text(2) ?? "", attempts: Int(statement.int(3)),
                        at: statement.double(4), getOnly: statement.int(5) != 0))
            }
            return rows
        }
    }

    /// The failures still pending: a failure of a URL only `get` asked for ages out (rows of an
    /// index older than schema 4, read without migrating, have no such mark).
    private func pendingFilter() throws -> String {
        guard try Self.hasColumn(database, "failures", "get_only") else { return "" }
        let cutoff = Date().timeIntervalSince1970 - FailureRecord.getOnlyLifetime
        return " WHERE get_only = 0 OR at >= \(cutoff)"
    }

    public func manifestRuns() throws(CacheError) -> [ManifestRun] {
        try wrap {
            let statement = try database.prepare(
                "SELECT path, name, entries, finished_at, failed FROM manifest_runs ORDER BY path")
            var runs: [ManifestRun] = []
            while try statement.step() {
                runs.append(
                    ManifestRun(
                        path: statement.text(0) ?? "", name: statement.text(1) ?? "",
                        entries: Int(statement.int(2)), finishedAt: statement.double(3),
                        failed: Int(statement.int(4))))
            }
            return runs
        }
    }

    /// Origins a run gave up on and no later run has reached. An index made before the table
    /// existed (and opened without migrating) has none.
    public func unhealthyOrigins() throws(CacheError) -> [UnhealthyOrigin] {
        try wrap {
            let exists = try database.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'origins'")
            guard try exists.step() else { return [] }
            let statement = try database.prepare("SELECT origin, since, problem, checked FROM origins ORDER BY origin")
            var rows: [UnhealthyOrigin] = []
            while try statement.step() {
                rows.append(
                    UnhealthyOrigin(
                        origin: statement.text(0) ?? "", since: statement.double(1),
                        problem: statement.text(2) ?? "", checked: statement.double(3)))
            }
            return rows
        }
    }

    /// Records what a run learnt of its origins: `down` ones are kept (since when they first
    /// were), `reached` ones are forgotten.
    public func recordOrigins(down: [(origin: String, problem: String)], reached: [String], at time: Double) throws(CacheError) {
        guard !down.isEmpty || !reached.isEmpty else { return }
        try wrap {
            try database.transaction {
                let mark = try database.prepare(
                    """
                    INSERT INTO origins(origin, since, problem, checked) VALUES (?, ?, ?, ?)
                    ON CONFLICT(origin) DO UPDATE SET problem = excluded.problem, checked = excluded.checked
                    """)
                for item in down {
                    try mark.run([.text(item.origin), .double(time), .text(item.problem), .double(time)])
                }
                let forget = try database.prepare("DELETE FROM origins WHERE origin = ?")
                for origin in reached { try forget.run([.text(origin)]) }
            }
        }
    }

    public func recordRuns(_ runs: [ManifestRun]) throws(CacheError) {
        try wrap {
            try database.transaction {
                let statement = try database.prepare(
                    """
                    INSERT INTO manifest_runs(path, name, entries, finished_at, failed) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT(path) DO UPDATE SET name = excluded.name, entries = excluded.entries,
                        finished_at = excluded.finished_at, failed = excluded.failed
                    """)
                for run in runs {
                    try statement.run([
                        .text(run.path), .text(run.name), .int(Int64(run.entries)),
                        .double(run.finishedAt), .int(Int64(run.failed)),
                    ])
                }
            }
        }
    }
}
