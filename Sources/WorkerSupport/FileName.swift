/// Names as a file system compares them: byte for byte. Swift's `String` `==` and `<` use
/// canonical equivalence, so `café` spelled with U+00E9 and with `e` + U+0301 are one `String`
/// but two names on disk; every comparison of paths that the file system will make again uses
/// these instead.
public enum FileName {
    /// Whether `a` and `b` are the same name on disk.
    @inlinable
    public static func same(_ a: some StringProtocol, _ b: some StringProtocol) -> Bool {
        a.utf8.elementsEqual(b.utf8)
    }

    /// Byte order (for ASCII names the same as `String`'s `<`).
    @inlinable
    public static func precedes(_ a: some StringProtocol, _ b: some StringProtocol) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }

    /// A path as a set or dictionary key that hashes and compares its bytes.
    public struct Key: Hashable, Sendable {
        public let bytes: [UInt8]

        public init(_ path: some StringProtocol) {
            bytes = Array(path.utf8)
        }
    }
}
