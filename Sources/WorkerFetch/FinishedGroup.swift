/// A download group that ended, as its consumer gets it (in a batch of them).
public struct FinishedGroup: Sendable {
    public let group: Int
    /// One result per item tried, in order; the last one is the group's outcome.
    public let results: [ItemResult]
}
