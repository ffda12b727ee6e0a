/// Where things live in a cache directory (PRODUCT.md's layout), in one place.
public enum CacheLayout {
    public static func indexPath(_ root: String) -> String { root + "/index.sqlite" }

    public static func objectsDirectory(_ root: String) -> String { root + "/objects/sha256" }

    /// Present while a run may have installed objects it has not indexed yet.
    public static func uncleanMarkPath(_ root: String) -> String { root + "/unclean" }

    /// `objects/sha256/ab/abcdef…` for an object named by its SHA-256 hex.
    public static func objectPath(_ root: String, _ sha256: String) -> String {
        objectsDirectory(root) + "/" + sha256.prefix(2) + "/" + sha256
    }
}
