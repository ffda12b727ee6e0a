/// When a run lists the object folders instead of looking each object up: the one rule, used by
/// the read-ahead before the lock and by the run under it.
public enum ListingRule {
    /// Rows up to which a sync lists the object folders to find unindexed objects (a few
    /// milliseconds); past it, only after an interrupted run or in gc.
    static let smallCache = 4096

    /// Whether a sync lists the object folders of a cache of `records` rows whatever its
    /// manifests (to sweep objects no row names): a small one.
    public static func listsEveryRun(records: Int) -> Bool {
        records <= smallCache
    }

    /// Listing the object folders beats one lookup per object when the manifests name a large
    /// share of a cache that is not tiny.
    public static func worthListing(entries: Int, records: Int) -> Bool {
        records >= 2048 && entries >= records / 4
    }
}
