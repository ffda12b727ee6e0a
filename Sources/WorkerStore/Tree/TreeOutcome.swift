/// What a publish did: the report's `tree` object.
public struct TreeOutcome: Sendable, Codable, Equatable {
    /// The tree's link, absolute.
    public var path: String
    /// The version folder the link names (`.NAME.worker/v-…` beside it).
    public var version: String
    /// Files in the version.
    public var files = 0
    /// Files made for this version: hard links to the objects, or copies on another file system.
    public var linked = 0
    public var copied = 0
    /// Entries with nothing to show (never fetched): absent from the tree.
    public var missing = 0
    /// Whether the link now names another version than before the run.
    public var switched = false
    /// Why the publish failed (the link still names the version before), when it did.
    public var error: String?
    /// Not switched because entries are missing and only a complete tree may be published
    /// (`--tree-complete`): the link still names the version before.
    public var withheld = false
    /// Withheld because the run was stopped from outside (Ctrl-C, SIGTERM) with entries not done
    /// (`missing` counts them): the link still names the version before.
    public var stopped = false

    public init(
        path: String,
        version: String,
        files: Int = 0,
        linked: Int = 0,
        copied: Int = 0,
        missing: Int = 0,
        switched: Bool = false,
        error: String? = nil
    ) {
        self.path = path
        self.version = version
        self.files = files
        self.linked = linked
        self.copied = copied
        self.missing = missing
        self.switched = switched
        self.error = error
    }
}
