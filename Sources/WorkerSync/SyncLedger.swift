import FoundationEssentials
import WorkerFetch
import WorkerManifest
import WorkerPlan
import WorkerReport
import WorkerStore
import WorkerSupport

/// One run's account, and the one place its report is made. Built once with what is known when
/// the run starts — the plan (its manifests and items), the cache directory, the start time, the
/// retention rule (`ReportBuilder`) and the rate limits — it takes typed events as the run goes,
/// derives each entry's status from its planned action, and returns the finished `SyncReport`.
/// A sync and a dry run keep one the same way.
struct SyncLedger {
    /// What happened to a plan item, or to the run.
    enum Event {
        /// The stored version is current: planned so (`keep`), or a 304 said so.
        case unchanged(item: Int, attempts: Int?)
        /// Content already stored (another URL's, or another item's of this run) now serves the item.
        case reused(item: Int, object: String, size: Int64)
        /// A verified body for the item, from `source`.
        case delivered(
            item: Int, object: String, size: Int64, attempts: Int, source: SourceKind? = nil,
            servedBy: String? = nil)
        /// `origin`: where its request went (its route's), counted for a given-up origin.
        case failed(item: Int, FetchFailure, attempts: Int, stale: Bool, origin: Origin?)
        /// A dry run: what a sync would do with the item.
        case planned(item: Int)
        /// An orphan `--prune` removed (or, in a dry run, would remove); `position` orders it.
        case pruned(IndexRecord, position: Int, done: Bool)
        /// Orphans kept by `--prune-after`, or the reason `--prune-max` refused them.
        case pruneWaiting(Int)
        case pruneRefused(String)
        /// Body bytes received (all attempts).
        case received(Int64)
        case originGivenUp(SyncReport.OriginProblem)
        /// What the shared tier did in the run.
        case remoteCache(SyncReport.RemoteCache)
        /// A mirror (`servedBy`) served an item because its own URL failed.
        case failedOver(Failover, servedBy: String)
        /// The tree `--tree` published (or, in a dry run, would publish), or why it could not
        /// (`failure`: every output is still written, and says so).
        case tree(TreeOutcome, failure: CacheError?)
    }

    /// An item's outcome, kept when asked for (`get`, `manifest --urls`): its status, the
    /// SHA-256 of the content it now names, and its row (what `get` shows, or why it failed),
    /// whether or not the report lists it.
    struct Outcome: Sendable, Equatable {
        let status: EntryStatus
        let sha256: String?
        let row: SyncReport.Entry
    }

    private let plan: SyncPlan
    private var report: SyncReport
    private var rows: ReportBuilder
    /// Builds rows; apart from `self`, so that a row is built while `rows` changes.
    private let maker: RowMaker
    private var outcomes: [Outcome?]
    /// The object each item names after the run, kept for `--tree` (`keepsObjects`); nil for
    /// one that failed or was not done.
    private var objects: [ObjectName?]
    /// Failed entries per manifest (its run's record) and per origin (a given-up origin's count).
    private(set) var failuresPerManifest: [Int]
    private var failuresPerOrigin: [Origin: Int] = [:]
    /// Failovers by the failed origin, in the order first seen.
    private var failovers: [Origin: SyncReport.Failover] = [:]
    private var failoverOrder: [Origin] = []

    /// `outputs` and `shownRows` decide the rows kept (`rowsKept`); `store` gives the rows their
    /// object paths (none in a dry run's rows); `keepsOutcomes` keeps one `Outcome` per item.
    init(
        plan: SyncPlan, cacheDirectory: String, startedAt: Date, outputs: SyncOutputs, shownRows: Int?,
        limits: SyncReport.Limits?, dryRun: Bool = false, store: ContentStore? = nil, keepsOutcomes: Bool = false,
        keepsObjects: Bool = false
    ) {
        self.plan = plan
        report = SyncReport(
            dryRun: dryRun, startedAt: startedAt, finishedAt: startedAt, cacheDirectory: cacheDirectory,
            manifests: plan.manifests.manifests.map {
                SyncReport.ManifestSummary(path: $0.path, name: $0.name, entries: $0.entryCount)
            })
        report.limits = limits
        report.orphans = plan.orphans.count
        rows = Self.rowsKept(outputs: outputs, shownRows: shownRows, factsDirectory: store?.tmpDirectory)
        maker = RowMaker(manifestNames: plan.manifests.manifests.map(\.name), store: store)
        outcomes = keepsOutcomes ? Array(repeating: nil, count: plan.items.count) : []
        objects = keepsObjects ? Array(repeating: nil, count: plan.items.count) : []
        failuresPerManifest = Array(repeating: 0, count: plan.manifests.manifests.count)
    }

    /// The rows a run keeps, decided here only. Failures always. Every row an output file lists:
    /// JUnit has a case per entry checked (unchanged ones too); the JSON report, the HTML page and
    /// the Markdown summary list every entry that is not unchanged (the report all of them with
    /// `reportAll`). Without such a file, as many as the caller shows (`shownRows`: the text
    /// summary's list; 0 when it reads outcomes instead, nil for all) — a million-entry run need
    /// not hold a million rows for a summary of twenty.
    static func rowsKept(outputs: SyncOutputs, shownRows: Int?, factsDirectory: String? = nil) -> ReportBuilder {
        let rows = outputs.rows
        return ReportBuilder(
            listLimit: rows.isEmpty ? shownRows : nil, reportAll: rows.contains(.unchanged), factsDirectory: factsDirectory)
    }

    /// Entries of `origin` that failed so far.
    func failures(of origin: Origin) -> Int {
        failuresPerOrigin[origin] ?? 0
    }

    /// The totals so far (progress reads them).
    var totals: SyncReport.Totals { rows.totals }

    /// An item's outcome (nil unless kept, or before the item is done).
    func outcome(of item: Int) -> Outcome? {
        item < outcomes.count ? outcomes[item] : nil
    }

    /// The object `item` names after the run (`keepsObjects`): nil when it failed, was not
    /// done, or objects are not kept.
    func object(of item: Int) -> ObjectName? {
        item < objects.count ? objects[item] : nil
    }

    mutating func record(_ event: Event) {
        switch event {
        case .unchanged(let item, let attempts):
            let previous = plan.previous(at: item)
            add(item, .unchanged, name: previous?.objectName, object: previous?.object, size: previous?.size, attempts: attempts)
        case .reused(let item, let object, let size):
            add(item, .reused, object: object, size: size, attempts: nil)
        case .delivered(let item, let object, let size, let attempts, let source, let servedBy):
            let action = plan.action(at: item)
            if action == .repair { rows.totals.repaired += 1 }
            if action == .refresh { rows.totals.refreshed += 1 }
            let status = deliveredStatus(item, object: object)
            add(
                item, status, object: object, size: size, attempts: attempts, source: status == .unchanged ? nil : source,
                servedBy: servedBy)
        case .failed(let item, let failure, let attempts, let stale, let origin):
            let planned = plan.item(at: item)
            if item < objects.count { objects[item] = nil }
            failuresPerManifest[planned.entry.manifest] += 1
            if let origin { failuresPerOrigin[origin, default: 0] += 1 }
            add(item, .failed, sha256: nil) { [maker] in
                var row = maker.entry(planned, status: .failed, object: nil, size: nil, attempts: attempts)
                row.reason = failure.reason
                row.error = failure.message
                row.httpStatus = failure.httpStatus
                row.actualHash = failure.actualHash?.description
                row.stale = stale
                return row
            }
        case .planned(let item):
            let planned = plan.item(at: item)
            let status = planned.plannedStatus
            rows.add(status, order: item) {
                SyncReport.Entry(
                    url: Redact.url(planned.entry.url), hash: planned.entry.hash?.description, status: status,
                    previousHash: status == .updated ? planned.previous?.hash : nil)
            }
        case .pruned(let orphan, let position, let done):
            rows.add(.removed, order: plan.items.count + position) {
                SyncReport.Entry(
                    url: Redact.url(orphan.url), hash: orphan.hash, status: .removed,
                    bytes: done ? orphan.size : nil)
            }
        case .pruneWaiting(let count):
            report.pruneWaiting = count
        case .pruneRefused(let reason):
            report.pruneRefused = reason
        case .received(let bytes):
            rows.totals.bytesDownloaded += bytes
        case .failedOver(let failover, let servedBy):
            let mirror = Origin.of(servedBy).name
            if var known = failovers[failover.origin] {
                known.entries += 1
                if !known.servedBy.contains(mirror) { known.servedBy.append(mirror) }
                failovers[failover.origin] = known
            } else {
                failoverOrder.append(failover.origin)
                failovers[failover.origin] = SyncReport.Failover(
                    origin: failover.origin.name, entries: 1, reason: failover.failure.reason,
                    httpStatus: failover.failure.httpStatus,
                    error: failover.failure.message, servedBy: [mirror])
            }
        case .originGivenUp(let problem):
            report.unreachableOrigins.append(problem)
        case .remoteCache(let summary):
            report.remoteCache = summary
        case .tree(let outcome, let failure):
            report.tree = outcome
            report.treeFailure = failure
        }
    }

    /// The finished report: totals, rows in manifest order, and whether the run met `budget`
    /// (a dry run has none: it fails nothing).
    func report(finishedAt: Date, budget: FailureBudget?) -> SyncReport {
        var report = report
        report.finishedAt = finishedAt
        report.totals = rows.totals
        report.totals.entries = plan.items.count
        report.entries = rows.entries { [plan, maker] order, status, facts in
            maker.entry(plan.item(at: order), status: status, facts: facts)
        }
        report.failover = failoverOrder.compactMap { failovers[$0] }
        if let budget { report.succeeded = budget.allows(report) }
        return report
    }

    // MARK: - Rows

    /// The status a body delivered for `item` gives it, by its planned action.
    private func deliveredStatus(_ item: Int, object: String) -> EntryStatus {
        switch plan.action(at: item) {
        case .repair: return .updated
        case .refresh, .revalidate: return object == plan.previous(at: item)?.object ? .unchanged : .updated
        case .keep, .reuse, .download: return plan.isUpdate(at: item) ? .updated : .added
        }
    }

    /// Counts an item's outcome. Its row is kept as facts when the plan item and they tell it
    /// entirely (made as the report is written), else whole.
    private mutating func add(
        _ item: Int, _ status: EntryStatus, object: String?, size: Int64?, attempts: Int?,
        source: SourceKind? = nil, servedBy: String? = nil
    ) {
        add(
            item, status, name: object.flatMap(ObjectName.init(hex:)), object: object, size: size, attempts: attempts,
            source: source, servedBy: servedBy)
    }

    /// `add` with the object's name read already (`object`, its hex, is made only for a whole row).
    private mutating func add(
        _ item: Int, _ status: EntryStatus, name: ObjectName?, object: @autoclosure () -> String?,
        size: Int64?, attempts: Int?, source: SourceKind? = nil, servedBy: String? = nil
    ) {
        if item < objects.count { objects[item] = name }
        guard item < outcomes.count || servedBy != nil || name == nil && object() != nil else {
            return rows.add(status, order: item, facts: RowFacts(object: name, size: size, attempts: attempts, source: source))
        }
        let object = object()
        let planned = plan.item(at: item)
        add(item, status, sha256: object) { [maker] in
            var row = maker.entry(planned, status: status, facts: RowFacts(object: name, size: size, attempts: attempts, source: source))
            row.path = object.flatMap { maker.store?.objectPath($0) }
            row.servedBy = servedBy.map(Redact.url)
            return row
        }
    }

    /// Counts an item's row by the report's rule and, when outcomes are kept, keeps it with the
    /// item's outcome (the row is built only when one of them needs it).
    private mutating func add(_ item: Int, _ status: EntryStatus, sha256: String?, row: () -> SyncReport.Entry) {
        guard item < outcomes.count else { return rows.add(status, order: item, row: row) }
        let built = row()
        outcomes[item] = Outcome(status: status, sha256: sha256, row: built)
        rows.add(status, order: item) { built }
    }
}

/// A plan item's report row, with the paths of its objects (none without a store: a dry run).
private struct RowMaker: Sendable {
    let manifestNames: [String]
    let store: ContentStore?

    func entry(
        _ planned: PlannedEntry, status: EntryStatus, object: String?, size: Int64?,
        attempts: Int?
    ) -> SyncReport.Entry {
        SyncReport.Entry(
            url: Redact.url(planned.entry.url),
            hash: planned.entry.hash?.description,
            status: status,
            previousHash: status == .updated ? planned.previous.map { $0.hash ?? "sha256:" + $0.object } : nil,
            bytes: size,
            attempts: attempts,
            path: object.flatMap { store?.objectPath($0) },
            manifest: manifestNames[planned.entry.manifest],
            previousPath: status == .updated || status == .failed ? planned.previous.flatMap { store?.objectPath($0.object) } : nil
        )
    }

    /// The row of an item's outcome told by its facts.
    func entry(_ planned: PlannedEntry, status: EntryStatus, facts: RowFacts) -> SyncReport.Entry {
        var row = entry(planned, status: status, object: facts.object?.hex, size: facts.size, attempts: facts.attempts)
        if planned.action == .repair, status != .reused {
            row.refetched = "the cached file's size was not the index's (it changed on disk)"
        }
        row.source = facts.source
        return row
    }
}
