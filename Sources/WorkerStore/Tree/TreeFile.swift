import WorkerSupport

/// One file of a tree to publish: where it goes, and the object (or file) it holds.
public struct TreeFile: Sendable, Equatable {
    /// Relative to the tree (checked by `TreePath.problem`).
    public let path: String
    /// A cache object's name (its SHA-256) when `objects` is set, else a file's absolute path;
    /// nil for an entry never fetched. A tree's version is a digest of these: an object's path is
    /// made only when the version is built (a warm run whose tree did not change makes none).
    let object: String?
    let objects: String?

    /// A file holding `source` (an absolute path).
    public init(path: String, source: String?) {
        self.path = path
        object = source
        objects = nil
    }

    /// A file holding the cache object `object` of the folder `objectsDirectory`.
    public init(path: String, object: String?, objectsDirectory: String) {
        self.path = path
        self.object = object
        objects = objectsDirectory
    }

    /// The file to link, absolute.
    public var source: String? {
        guard let object else { return nil }
        guard let objects else { return object }
        return CacheLayout.objectPath(inObjectsDirectory: objects, object)
    }
}
