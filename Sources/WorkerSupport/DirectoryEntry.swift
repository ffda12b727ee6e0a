import Glibc

/// A name `readdir` returned, read within its record.
///
/// `dirent` declares `d_name` as 256 bytes, but a record is only as long as its name: copying the
/// field (`entry.pointee.d_name`, or `withUnsafeBytes(of:)` on it) reads up to 256 bytes past it,
/// beyond the buffer `readdir` filled once a folder lists more than fit in it: a crash where
/// that buffer ends at an unmapped page. (Foundation's `Process` on Linux does exactly this over
/// `/proc/self/fd`, and crashed the test suite holding 1,400 descriptors.)
public enum DirectoryEntry {
    /// The entry's name, without its terminating NUL, for the length of `body`.
    public static func withName<R>(_ entry: UnsafePointer<dirent>, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        let start = UnsafeRawPointer(entry) + MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        return body(UnsafeRawBufferPointer(start: start, count: strlen(start.assumingMemoryBound(to: CChar.self))))
    }
}
