import WorkerManifest
import WorkerStore

/// What a sync will do with one manifest entry.
public struct PlannedEntry: Sendable {
    public enum Action: Sendable, Equatable {
        /// The index has this URL at this hash and the object is present.
        case keep
        /// Missing or changed: download it.
        case download
        /// The content is already stored under another URL: link it, no download.
        case reuse(object: String, size: Int64)
        /// A hashless entry to check with a conditional request (`--revalidate`).
        case revalidate
        /// Download and verify it again whatever the index says (`--refresh`); the same bytes
        /// leave it unchanged.
        case refresh
        /// The index has this URL at this version, but its object's size is not the row's (the
        /// file changed on disk): download and verify it again, replacing the file.
        case repair

        /// Whether the action fetches (download, revalidate, refresh, repair).
        public var needsNetwork: Bool {
            switch self {
            case .keep, .reuse: false
            case .download, .revalidate, .refresh, .repair: true
            }
        }
    }

    public let entry: ManifestEntry
    public let action: Action
    /// The URL's current row, if it has one.
    public let previous: IndexRow?

    /// The status this entry will have if its action succeeds.
    public var plannedStatus: EntryStatus {
        switch action {
        case .keep, .revalidate: .unchanged
        case .refresh: previous == nil ? .added : .unchanged
        case .reuse: .reused
        case .download: isUpdate ? .updated : .added
        case .repair: .updated
        }
    }

    /// True when the URL is stored at another version (its hash changed).
    public var isUpdate: Bool {
        Self.isUpdate(of: previous, to: entry.hash)
    }

    /// Whether `hash` is another version than the URL's row `previous` holds (none: not an update).
    static func isUpdate(of previous: IndexRow?, to hash: ContentHash?) -> Bool {
        guard let previous else { return false }
        return previous.hash != hash?.description
    }
}
