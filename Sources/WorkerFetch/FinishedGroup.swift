/// A download group that ended, as its consumer gets it (in a batch of them).
package struct FinishedGroup: Sendable {
    package let group: Int
    /// One result per item tried, in order; the last one is the group's outcome.
    package let results: [ItemResult]
}
