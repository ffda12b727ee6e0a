import FoundationEssentials
import Glibc
import WorkerFetch
import WorkerPlan
import WorkerStore

/// The outcome of a run (`plan` or `sync`): the report schema of docs/REPORT.md.
public struct SyncReport: Sendable {
    public struct ManifestSummary: Sendable, Codable, Equatable {
        public let path: String
        public let name: String
        public let entries: Int

        public init(path: String, name: String, entries: Int) {
            self.path = path
            self.name = name
            self.entries = entries
        }
    }

    public struct Totals: Sendable, Codable, Equatable {
        public var entries = 0
        public var unchanged = 0
        public var added = 0
        public var updated = 0
        public var reused = 0
        public var failed = 0
        public var removed = 0
        public var bytesDownloaded: Int64 = 0
        /// Entries downloaded again by `--refresh` although the index had them.
        public var refreshed = 0
        /// Entries fetched again because their cached file had changed on disk (counted as updated).
        public var repaired = 0

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
    public struct Entry: Sendable, Codable, Equatable {
        public var url: String
        public var hash: String?
        public var status: EntryStatus
        public var previousHash: String?
        public var bytes: Int64?
        public var attempts: Int?
        public var path: String?
        public var reason: FailureReason?
        public var error: String?
        public var httpStatus: Int?
        /// What the body hashed to, for a `hash_mismatch` (`hash` is what was expected).
        public var actualHash: String?
        public var stale: Bool?
        /// The name of the manifest that lists the entry.
        public var manifest: String?
        /// The object of the earlier version (updated entries, and failed ones still served).
        public var previousPath: String?
        /// Why an entry the index had was fetched again though its version had not changed.
        public var refetched: String?
        /// Where a fetched body came from: `origin`, `remote` (the shared tier) or `local`.
        public var source: SourceKind?
        /// The mirror that delivered the body, when not the entry's URL (redacted).
        public var servedBy: String?

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

        public init(
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

    public var dryRun = false
    public var startedAt: Date
    public var finishedAt: Date
    public var cacheDirectory: String
    public var manifests: [ManifestSummary]
    public var totals = Totals()
    /// Every entry that is not `unchanged` (all of them when the run asked for it).
    public var entries: ReportRows = []
    /// Orphans that `--prune` would remove or was not allowed to remove.
    public var orphans = 0
    /// Set when pruning was refused by `--prune-max`.
    public var pruneRefused: String?
    /// Orphans kept because their `--prune-after` grace period has not passed.
    public var pruneWaiting = 0
    /// The rate limits the run kept (`--limit-rate`, `--max-rps`), if any.
    public var limits: Limits?

    public struct Limits: Sendable, Codable, Equatable {
        public var limitRate: Int64?
        public var maxRequestsPerSecond: Double?

        enum CodingKeys: String, CodingKey {
            case limitRate = "limit_rate_bytes_per_second"
            case maxRequestsPerSecond = "max_requests_per_second"
        }

        public init(limitRate: Int64? = nil, maxRequestsPerSecond: Double? = nil) {
            self.limitRate = limitRate
            self.maxRequestsPerSecond = maxRequestsPerSecond
        }
    }

    /// What the shared tier did (a run with `--remote-cache` that downloaded).
    public var remoteCache: RemoteCache?
    /// The tree `--tree` published (or, on a dry run, would publish).
    public var tree: TreeOutcome?
    /// Why publishing the tree failed (its `error` says it in the outputs): the run ends with
    /// this error's exit code once every output is written.
    public var treeFailure: CacheError?

    /// The report's `remote_cache` object: the tier's own counts.
    public typealias RemoteCache = RemoteTierCounts

    /// What stopped the run before its entries were planned (a manifest that could not be read):
    /// the outputs say it, and the run ends with its exit code.
    public var error: String?

    /// Whether the run met its success rule (failures within `--max-failures`, no refused prune).
    public var succeeded = true
    /// Origins the run gave up on: their remaining entries failed without a request.
    public var unreachableOrigins: [OriginProblem] = []
    /// Entries' own origins that failed while a mirror served them, one per origin.
    public var failover: [Failover] = []
    /// What `--rewrite` did: whether the run was strict, and the rules no location was under.
    public var rewrite: Rewrite?

    /// The report's `rewrite` object.
    public struct Rewrite: Sendable, Codable, Equatable {
        public var strict: Bool
        public var rules: Int
        /// Each rule no location of the run was under (its FROM, without user info).
        public var unmatched: [String]

        public init(strict: Bool, rules: Int, unmatched: [String]) {
            self.strict = strict
            self.rules = rules
            self.unmatched = unmatched
        }
    }

    /// Mirrors served `entries` entries because their own URLs on `origin` failed: the first
    /// failure's reason and words, and which mirrors served.
    public struct Failover: Sendable, Codable, Equatable {
        public var origin: String
        public var entries: Int
        public var reason: FailureReason
        public var httpStatus: Int?
        public var error: String
        public var servedBy: [String]

        enum CodingKeys: String, CodingKey {
            case origin, entries, reason, error
            case httpStatus = "http_status"
            case servedBy = "served_by"
        }

        public init(origin: String, entries: Int, reason: FailureReason, httpStatus: Int?, error: String, servedBy: [String]) {
            self.origin = origin
            self.entries = entries
            self.reason = reason
            self.httpStatus = httpStatus
            self.error = error
            self.servedBy = servedBy
        }
    }

    /// An origin given up in a run, and what that cost.
    public struct OriginProblem: Sendable, Codable, Equatable {
        public var origin: String
        public var problem: String
        /// When a run first found it down (this one, or an earlier one).
        public var since: String
        /// Entries of this origin that failed, and how many of them were not tried at all.
        public var failed: Int
        public var notTried: Int

        enum CodingKeys: String, CodingKey {
            case origin, problem, since, failed
            case notTried = "not_tried"
        }

        public init(origin: String, problem: String, since: String, failed: Int, notTried: Int) {
            self.origin = origin
            self.problem = problem
            self.since = since
            self.failed = failed
            self.notTried = notTried
        }
    }

    public var duration: Double { finishedAt.timeIntervalSince(startedAt) }

    public var failedEntries: [Entry] { Array(entries.with { $0 == .failed }) }

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
