import FoundationEssentials
import Glibc
import WorkerFetch
import WorkerPlan
import WorkerStore

/// The outcome of a run (`plan` or `sync`): the report schema of docs/REPORT.md.
package struct SyncReport: Sendable {
    package struct ManifestSummary: Sendable, Codable, Equatable {
        package let path: String
        package let name: String
        package let entries: Int

        package init(path: String, name: String, entries: Int) {
            self.path = path
            self.name = name
            self.entries = entries
        }
    }

    package struct Totals: Sendable, Codable, Equatable {
        package var entries = 0
        package var unchanged = 0
        package var added = 0
        package var updated = 0
        package var reused = 0
        package var failed = 0
        package var removed = 0
        package var bytesDownloaded: Int64 = 0
        /// Entries downloaded again by `--refresh` although the index had them.
        package var refreshed = 0
        /// Entries fetched again because their cached file had changed on disk (counted as updated).
        package var repaired = 0

        enum CodingKeys: String, CodingKey {
            case entries, unchanged, added, updated, reused, failed, removed
            case bytesDownloaded = "bytes_downloaded"
            case refreshed, repaired
        }

        mutating func count(_ status: EntryStatus) {
            switch status {
            case .unchanged: unchanged += 1
            case .added: added += 1
            case .updated: updated += 1
            case .reused: reused += 1
            case .failed: failed += 1
            case .removed: removed += 1
            }
        }
    }

    /// One entry's outcome. URLs are stored redacted (no user info).
    package struct Entry: Sendable, Codable, Equatable {
        package var url: String
        package var hash: String?
        package var status: EntryStatus
        package var previousHash: String?
        package var bytes: Int64?
        package var attempts: Int?
        package var path: String?
        package var reason: FailureReason?
        package var error: String?
        package var httpStatus: Int?
        /// What the body hashed to, for a `hash_mismatch` (`hash` is what was expected).
        package var actualHash: String?
        package var stale: Bool?
        /// The name of the manifest that lists the entry.
        package var manifest: String?
        /// The object of the earlier version (updated entries, and failed ones still served).
        package var previousPath: String?
        /// Why an entry the index had was fetched again though its version had not changed.
        package var refetched: String?
        /// Where a fetched body came from: `origin`, `remote` (the shared tier) or `local`.
        package var source: SourceKind?
        /// The mirror that delivered the body, when not the entry's URL (redacted).
        package var servedBy: String?

        enum CodingKeys: String, CodingKey {
            case url, hash, status
            case previousHash = "previous_hash"
            case bytes, attempts, path, reason, error
            case httpStatus = "http_status"
            case actualHash = "actual_hash"
            case stale, manifest
            case previousPath = "previous_path"
            case refetched, source
            case servedBy = "served_by"
        }

        package init(
            url: String,
            hash: String? = nil,
            status: EntryStatus,
            previousHash: String? = nil,
            bytes: Int64? = nil,
            attempts: Int? = nil,
            path: String? = nil,
            reason: FailureReason? = nil,
            error: String? = nil,
            httpStatus: Int? = nil,
            actualHash: String? = nil,
            stale: Bool? = nil,
            manifest: String? = nil,
            previousPath: String? = nil,
            refetched: String? = nil,
            source: SourceKind? = nil,
            servedBy: String? = nil
        ) {
            self.url = url
            self.hash = hash
            self.status = status
            self.previousHash = previousHash
            self.bytes = bytes
            self.attempts = attempts
            self.path = path
            self.reason = reason
            self.error = error
            self.httpStatus = httpStatus
            self.actualHash = actualHash
            self.stale = stale
            self.manifest = manifest
            self.previousPath = previousPath
            self.refetched = refetched
            self.source = source
            self.servedBy = servedBy
        }
    }

    package var dryRun = false
    package var startedAt: Date
    package var finishedAt: Date
    package var cacheDirectory: String
    package var manifests: [ManifestSummary]
    package var totals = Totals()
    /// Every entry that is not `unchanged` (all of them when the run asked for it).
    package var entries: ReportRows = []
    /// Orphans that `--prune` would remove or was not allowed to remove.
    package var orphans = 0
    /// Set when pruning was refused by `--prune-max`.
    package var pruneRefused: String?
    /// Orphans kept because their `--prune-after` grace period has not passed.
    package var pruneWaiting = 0
    /// The rate limits the run kept (`--limit-rate`, `--max-rps`), if any.
    package var limits: Limits?

    package struct Limits: Sendable, Codable, Equatable {
        package var limitRate: Int64?
        package var maxRequestsPerSecond: Double?

        enum CodingKeys: String, CodingKey {
            case limitRate = "limit_rate_bytes_per_second"
            case maxRequestsPerSecond = "max_requests_per_second"
        }

        package init(limitRate: Int64? = nil, maxRequestsPerSecond: Double? = nil) {
            self.limitRate = limitRate
            self.maxRequestsPerSecond = maxRequestsPerSecond
        }
    }

    /// What the shared tier did (a run with `--remote-cache` that downloaded).
    package var remoteCache: RemoteCache?
    /// The tree `--tree` published (or, on a dry run, would publish).
    package var tree: TreeOutcome?
    /// Why publishing the tree failed (its `error` says it in the outputs): the run ends with
    /// this error's exit code once every output is written.
    package var treeFailure: CacheError?

    /// The report's `remote_cache` object: the tier's own counts.
    package typealias RemoteCache = RemoteTierCounts

    /// What stopped the run before its entries were planned (a manifest that could not be read):
    /// the outputs say it, and the run ends with its exit code.
    package var error: String?

    /// Whether the run met its success rule (failures within `--max-failures`, no refused prune).
    package var succeeded = true
    /// Origins the run gave up on: their remaining entries failed without a request.
    package var unreachableOrigins: [OriginProblem] = []
    /// Entries' own origins that failed while a mirror served them, one per origin.
    package var failover: [Failover] = []
    /// What `--rewrite` did: whether the run was strict, and the rules no location was under.
    package var rewrite: Rewrite?

    /// The report's `rewrite` object.
    package struct Rewrite: Sendable, Codable, Equatable {
        package var strict: Bool
        package var rules: Int
        /// Each rule no location of the run was under (its FROM, without user info).
        package var unmatched: [String]

        package init(strict: Bool, rules: Int, unmatched: [String]) {
            self.strict = strict
            self.rules = rules
            self.unmatched = unmatched
        }
    }

    /// Mirrors served `entries` entries because their own URLs on `origin` failed: the first
    /// failure's reason and words, and which mirrors served.
    package struct Failover: Sendable, Codable, Equatable {
        package var origin: String
        package var entries: Int
        package var reason: FailureReason
        package var httpStatus: Int?
        package var error: String
        package var servedBy: [String]

        enum CodingKeys: String, CodingKey {
            case origin, entries, reason, error
            case httpStatus = "http_status"
            case servedBy = "served_by"
        }

        package init(origin: String, entries: Int, reason: FailureReason, httpStatus: Int?, error: String, servedBy: [String]) {
            self.origin = origin
            self.entries = entries
            self.reason = reason
            self.httpStatus = httpStatus
            self.error = error
            self.servedBy = servedBy
        }
    }

    /// An origin given up in a run, and what that cost.
    package struct OriginProblem: Sendable, Codable, Equatable {
        package var origin: String
        package var problem: String
        /// When a run first found it down (this one, or an earlier one).
        package var since: String
        /// Entries of this origin that failed, and how many of them were not tried at all.
        package var failed: Int
        package var notTried: Int

        enum CodingKeys: String, CodingKey {
            case origin, problem, since, failed
            case notTried = "not_tried"
        }

        package init(origin: String, problem: String, since: String, failed: Int, notTried: Int) {
            self.origin = origin
            self.problem = problem
            self.since = since
            self.failed = failed
            self.notTried = notTried
        }
    }

    package var duration: Double { finishedAt.timeIntervalSince(startedAt) }

    package var failedEntries: [Entry] { Array(entries.with { $0 == .failed }) }

    package init(
        dryRun: Bool = false,
        startedAt: Date,
        finishedAt: Date,
        cacheDirectory: String,
        manifests: [ManifestSummary],
        totals: Totals = Totals(),
        entries: ReportRows = [],
        orphans: Int = 0,
        pruneRefused: String? = nil,
        pruneWaiting: Int = 0,
        limits: Limits? = nil,
        remoteCache: RemoteCache? = nil,
        tree: TreeOutcome? = nil,
        succeeded: Bool = true,
        unreachableOrigins: [OriginProblem] = []
    ) {
        self.dryRun = dryRun
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.cacheDirectory = cacheDirectory
        self.manifests = manifests
        self.totals = totals
        self.entries = entries
        self.orphans = orphans
        self.pruneRefused = pruneRefused
        self.pruneWaiting = pruneWaiting
        self.limits = limits
        self.remoteCache = remoteCache
        self.tree = tree
        self.succeeded = succeeded
        self.unreachableOrigins = unreachableOrigins
    }
}
