import WorkerManifest
import WorkerSupport

/// An object's name as the 32 bytes its 64 lowercase hex digits spell: a million of them cost
/// no string each (a set of listed files, a column of index rows).
public struct ObjectName: Hashable, Sendable {
    public let words: (UInt64, UInt64, UInt64, UInt64)

    /// The name whose 32 bytes are these four words (as `words` gives them).
    public init(words: (UInt64, UInt64, UInt64, UInt64)) {
        self.words = words
    }

    /// nil unless `hex` is exactly 64 lowercase hex digits.
    public init?(hex: UnsafeRawBufferPointer) {
        var bigEndian: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        guard withUnsafeMutableBytes(of: &bigEndian, { Hex.decodeLowercase(hex, into: $0) }) else { return nil }
        words = (
            UInt64(bigEndian: bigEndian.0), UInt64(bigEndian: bigEndian.1), UInt64(bigEndian: bigEndian.2),
            UInt64(bigEndian: bigEndian.3)
        )
    }

    /// nil unless `hex` is exactly 64 lowercase hex digits.
    public init?(hex: String) {
        var hex = hex
        guard let name = hex.withUTF8({ ObjectName(hex: UnsafeRawBufferPointer($0)) }) else { return nil }
        self = name
    }

    /// The name of the object whose SHA-256 is `digest` (32 bytes; nil for another count).
    public init?(digest: UnsafeRawBufferPointer) {
        guard digest.count == 32 else { return nil }
        func word(_ at: Int) -> UInt64 {
            digest[at..<at + 8].reduce(0) { $0 << 8 | UInt64($1) }
        }
        words = (word(0), word(8), word(16), word(24))
    }

    public static func == (a: ObjectName, b: ObjectName) -> Bool { a.words == b.words }

    /// The 64 lowercase hex digits.
    public var hex: String {
        let bigEndian = (words.0.bigEndian, words.1.bigEndian, words.2.bigEndian, words.3.bigEndian)
        return withUnsafeBytes(of: bigEndian) { bytes in
            String(unsafeUninitializedCapacity: 64) { Hex.encode(bytes, into: $0, at: 0) }
        }
    }

    /// Its fan-out folder (`00` … `ff`): the first byte.
    var fanOut: Int { Int(words.0 >> 56) }

    /// The 64 hex digits as a C string, made on the stack.
    func withCString<T>(_ body: (UnsafePointer<CChar>) -> T) -> T {
        let bigEndian = (words.0.bigEndian, words.1.bigEndian, words.2.bigEndian, words.3.bigEndian)
        return withUnsafeBytes(of: bigEndian) { bytes in
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 65) { out in
                out[Hex.encode(bytes, into: out, at: 0)] = 0
                return out.withMemoryRebound(to: CChar.self) { body($0.baseAddress!) }
            }
        }
    }

    /// Whether `hex` spells this name (64 lowercase hex digits), compared without a string.
    func isSpelled(by hex: UnsafeRawBufferPointer) -> Bool {
        ObjectName(hex: hex) == self
    }

    public func hash(into hasher: inout Hasher) {
        // SHA-256 output: any 64 of its bits are as good as all of them for bucketing.
        hasher.combine(words.0)
    }
}

extension ContentHash {
    /// Whether this is the SHA-256 the object is named by.
    public func names(_ object: ObjectName) -> Bool {
        algorithm == .sha256 && withDigest { ObjectName(digest: $0) } == object
    }
}
