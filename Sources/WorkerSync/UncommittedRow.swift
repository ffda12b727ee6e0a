import WorkerFetch
import WorkerManifest

/// A row of the batch waiting for its commit: a body delivered for an item, or content stored
/// before that now serves it. The ledger hears of it once the commit decided it (`event`), so an
/// outcome is told once and never taken back.
struct UncommittedRow {
    let item: Int
    let object: String
    let size: Int64
    /// The attempts that delivered the body; nil for a row that reuses stored content.
    let attempts: Int?
    let source: SourceKind?
    let servedBy: String?
    /// The origin the body's request went to; nil for a row that reuses stored content.
    let origin: Origin?

    /// A delivered body's row.
    init(item: Int, object: String, size: Int64, attempts: Int, source: SourceKind?, servedBy: String?, origin: Origin?) {
        (self.item, self.object, self.size, self.attempts, self.source, self.servedBy) = (item, object, size, attempts, source, servedBy)
        self.origin = origin
    }

    /// A row that reuses stored content.
    init(reusing object: String, size: Int64, item: Int) {
        (self.item, self.object, self.size, attempts, source, servedBy, origin) = (item, object, size, nil, nil, nil, nil)
    }

    /// What the ledger is told once the commit stored the row (`stored`), or had no room for it
    /// in the index: a failure with the attempts that delivered it. `stale`: whether the item's
    /// previous version is still stored.
    func event(stored: Bool, stale: @autoclosure () -> Bool) -> SyncLedger.Event {
        guard stored else {
            return .failed(
                item: item, FetchFailure(.io, "no space left on the device (the index had no room for its row)"),
                attempts: attempts ?? 1, stale: stale(), origin: origin)
        }
        guard let attempts else { return .reused(item: item, object: object, size: size) }
        return .delivered(item: item, object: object, size: size, attempts: attempts, source: source, servedBy: servedBy)
    }
}
