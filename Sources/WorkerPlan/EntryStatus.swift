/// The outcome of one entry in a run (the report's `status`).
package enum EntryStatus: String, Sendable, Codable, CaseIterable {
    case unchanged, added, updated, reused, failed, removed
}
