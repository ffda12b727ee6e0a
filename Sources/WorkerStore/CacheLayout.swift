import Glibc

/// Where things live in a cache directory (docs/CACHE.md's layout), in one place.
public enum CacheLayout {
    public static func indexPath(_ root: String) -> String { root + "/index.sqlite" }

    public static func objectsDirectory(_ root: String) -> String { root + "/objects/sha256" }

    /// Present while this process may have installed objects it has not indexed yet: one mark per
    /// writing process (`unclean.<pid>-<random>`), so that one writer ending never clears the mark
    /// of another still running. `unclean` alone is an older worker's.
    static func uncleanMarkPath(_ root: String) -> String { root + "/" + uncleanMarkPrefix + "." + processToken }

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
        let (folder, name) = (directory.utf8.count, sha256.utf8.count)
        guard name >= 2 else { return directory + "/" + sha256 + "/" + sha256 }
        // Written as bytes into a string of the right size: appending the fan-out folder as a
        // slice of the name cost as much as all the rest.
        return String(unsafeUninitializedCapacity: folder + name + 4) { path in
            var end = copy(directory, into: path, at: 0)
            path[end] = UInt8(ascii: "/")
            end = copy(sha256, into: path, at: end + 1, limit: 2)
            path[end] = UInt8(ascii: "/")
            return copy(sha256, into: path, at: end + 1)
        }
    }

    /// Copies `text`'s UTF-8 (at most `limit` bytes) into `buffer` at `start`; where it ended.
    private static func copy(
        _ text: String, into buffer: UnsafeMutableBufferPointer<UInt8>, at start: Int,
        limit: Int = .max
    ) -> Int {
        let copied = text.utf8.withContiguousStorageIfAvailable { bytes -> Int in
            let count = min(limit, bytes.count)
            if count > 0, let from = bytes.baseAddress, let to = buffer.baseAddress {
                (to + start).update(from: from, count: count)
            }
            return start + count
        }
        if let copied { return copied }
        var end = start
        for byte in text.utf8.prefix(limit) {
            buffer[end] = byte
            end += 1
        }
        return end
    }
}
