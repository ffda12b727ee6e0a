import Glibc

/// Where things live in a cache directory (docs/CACHE.md's layout), in one place.
public enum CacheLayout {
    public static func indexPath(_ root: String) -> String { root + "/index.sqlite" }

    public static func objectsDirectory(_ root: String) -> String { root + "/objects/sha256" }

    /// Present while this process may have installed objects it has not indexed yet: one mark per
    /// writing process (`unclean.<pid>-<random>`), so that one writer ending never clears the mark
    /// of another still running. `unclean` alone is an older worker's.
    public static func uncleanMarkPath(_ root: String) -> String { root + "/" + uncleanMarkPrefix + "." + processToken }

    static let uncleanMarkPrefix = "unclean"

    /// This process among the cache's writers, in the names of its temporary files and its mark:
    /// the pid and a random number (two pods sharing a volume may have the same pid).
    static let processToken = "\(getpid())-" + String(UInt32.random(in: 0...UInt32.max), radix: 16)

    /// `objects/sha256/ab/abcdef…` for an object named by its SHA-256 hex.
    public static func objectPath(_ root: String, _ sha256: String) -> String {
        objectPath(inObjectsDirectory: objectsDirectory(root), sha256)
    }

    /// The same, from `objectsDirectory(root)` computed once (a tree's thousands of paths), as
    /// one string built in place.
    public static func objectPath(inObjectsDirectory directory: String, _ sha256: String) -> String {
        var path = ""
        path.reserveCapacity(directory.utf8.count + sha256.utf8.count + 4)
        path += directory
        path += "/"
        path += sha256.prefix(2)
        path += "/"
        path += sha256
        return path
    }
}
