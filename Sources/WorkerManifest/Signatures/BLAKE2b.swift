/// BLAKE2b-512 (RFC 7693), unkeyed: the hash minisign signs in its default (prehashed, `ED`) mode.
/// swift-crypto has no BLAKE2; this is the RFC's reference algorithm, checked against its test
/// vector and against signatures made by the `minisign` program.
struct BLAKE2b {
    private static let iv: [UInt64] = [
        0x6a09e667f3bcc908, 0xbb67ae8584caa73b, 0x3c6ef372fe94f82b, 0xa54ff53a5f1d36f1,
        0x510e527fade682d1, 0x9b05688c2b3e6c1f, 0x1f83d9abfb41bd6b, 0x5be0cd19137e2179,
    ]
    private static let sigma: [[Int]] = [
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
        [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
        [11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4],
        [7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8],
        [9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13],
        [2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9],
        [12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11],
        [13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10],
        [6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5],
        [10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0],
    ]

    /// The 64-byte digest of `message`.
    static func hash512(_ message: [UInt8]) -> [UInt8] {
        // Unsafe buffers throughout: with arrays, each block's copies and bounds checks made an
        // 850 KB manifest's hash cost several milliseconds.
        withUnsafeTemporaryAllocation(of: UInt64.self, capacity: 8 + 16 + 16) { words in
            let state = words.baseAddress!
            let v = state + 8
            let m = state + 24
            for index in 0..<8 { state[index] = iv[index] }
            state[0] ^= 0x0101_0000 ^ 64
            message.withUnsafeBytes { bytes in
                var offset = 0
                var counter: UInt64 = 0
                // Every block but the last is compressed as it comes; the last (possibly empty or
                // short, zero-padded) is compressed with the final flag.
                while bytes.count - offset > 128 {
                    counter += 128
                    for word in 0..<16 {
                        m[word] = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + word * 8, as: UInt64.self))
                    }
                    compress(state, v, m, counter: counter, last: false)
                    offset += 128
                }
                let rest = bytes.count - offset
                counter += UInt64(rest)
                for word in 0..<16 { m[word] = 0 }
                UnsafeMutableRawPointer(m).copyMemory(from: bytes.baseAddress.map { $0 + offset } ?? UnsafeRawPointer(m), byteCount: rest)
                for word in 0..<16 { m[word] = UInt64(littleEndian: m[word]) }
                compress(state, v, m, counter: counter, last: true)
            }
            var digest: [UInt8] = []
            digest.reserveCapacity(64)
            for index in 0..<8 {
                for byte in 0..<8 { digest.append(UInt8(truncatingIfNeeded: state[index] >> (8 * UInt64(byte)))) }
            }
            return digest
        }
    }

    private static func compress(
        _ state: UnsafeMutablePointer<UInt64>, _ v: UnsafeMutablePointer<UInt64>,
        _ m: UnsafeMutablePointer<UInt64>, counter: UInt64, last: Bool
    ) {
        for index in 0..<8 {
            v[index] = state[index]
            v[index + 8] = iv[index]
        }
        v[12] ^= counter
        if last { v[14] = ~v[14] }
        for round in 0..<12 {
            let s = sigma[round % 10]
            mix(v, 0, 4, 8, 12, m[s[0]], m[s[1]])
            mix(v, 1, 5, 9, 13, m[s[2]], m[s[3]])
            mix(v, 2, 6, 10, 14, m[s[4]], m[s[5]])
            mix(v, 3, 7, 11, 15, m[s[6]], m[s[7]])
            mix(v, 0, 5, 10, 15, m[s[8]], m[s[9]])
            mix(v, 1, 6, 11, 12, m[s[10]], m[s[11]])
            mix(v, 2, 7, 8, 13, m[s[12]], m[s[13]])
            mix(v, 3, 4, 9, 14, m[s[14]], m[s[15]])
        }
        for index in 0..<8 { state[index] ^= v[index] ^ v[index + 8] }
    }

    @inline(__always)
    private static func mix(_ v: UnsafeMutablePointer<UInt64>, _ a: Int, _ b: Int, _ c: Int, _ d: Int, _ x: UInt64, _ y: UInt64) {
        v[a] = v[a] &+ v[b] &+ x
        v[d] = rotate(v[d] ^ v[a], 32)
        v[c] = v[c] &+ v[d]
        v[b] = rotate(v[b] ^ v[c], 24)
        v[a] = v[a] &+ v[b] &+ y
        v[d] = rotate(v[d] ^ v[a], 16)
        v[c] = v[c] &+ v[d]
        v[b] = rotate(v[b] ^ v[c], 63)
    }

    @inline(__always)
    private static func rotate(_ value: UInt64, _ count: UInt64) -> UInt64 {
        (value >> count) | (value << (64 - count))
    }
}
