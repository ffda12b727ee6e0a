/// The outcome of one entry in a run (the report's `status`).
public enum EntryStatus: String, Sendable, Codable, CaseIterable {
    case unchanged, added, updated, reused, failed, removed
}
