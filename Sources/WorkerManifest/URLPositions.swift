import CWorkerSystem

/// URL → entry index, keyed by a 64-bit digest of the URL (`digest64`), in an open-addressing
/// table of its own. A `[String: Int]` compares whole keys along every probe (manifest URLs share
/// long prefixes), and a `[UInt64: Int32]` still runs every key through the standard library's
/// seeded hasher: at a million entries each was a large share of `worker plan`. Here a lookup is one
/// multiply and a short linear probe over one flat array. Digest collisions fall back to a map
/// keyed by the URL itself.
///
/// A slot keeps 32 bits of the digest (8 bytes a slot: at a million URLs the table is 16 MB); two
/// URLs that share them are told apart by their text, as a full digest collision is.
///
/// Every insert misses the CPU's caches: `digest(_:)`
/// also asks for the slot's cache line, so a caller that inserts an entry later (the loader
/// inserts each one after reading the next) finds it loaded.
public struct URLPositions: Sendable {
    /// A digest and its position + 1 (0: the slot is empty), side by side: a probe reads one
    /// cache line.
    private struct Slot {
        var digest: UInt32 = 0
        var position: Int32 = 0
    }

    private var slots: [Slot] = []
    private var count = 0
    /// 64 − log2(slot count): a slot is the top bits of the digest times a constant.
    private var shift: UInt64 = 64
    private var collisions: [String: Int32] = [:]
    private let digester: @Sendable (UnsafeRawBufferPointer) -> UInt64

    /// `digest` is replaceable so tests can force collisions.
    public init(digest: @escaping @Sendable (UnsafeRawBufferPointer) -> UInt64 = URLPositions.digest64) {
        digester = digest
    }

    /// Makes room for `count` URLs without growing (the table stays at most three quarters full).
    public mutating func reserve(_ count: Int) {
        if count * 4 > slots.count * 3 { rehash(minimumSlots: count * 4 / 3 + 1) }
    }

    /// The position of `url`, given how to read the URL stored at a position.
    public func find(_ url: String, urlAt: (Int) -> String) -> Int? {
        var bytes = url
        return bytes.withUTF8 { find(UnsafeRawBufferPointer($0), isURL: { urlAt($0) == url }) }
    }

    /// The position of the URL whose UTF-8 bytes are `url`; `isURL` tells whether the URL stored
    /// at a position is that one (only asked when the digests match).
    public func find(_ url: UnsafeRawBufferPointer, isURL: (Int) -> Bool) -> Int? {
        guard !slots.isEmpty else { return nil }
        guard case .taken(let slot) = probe(Self.fold(digester(url))) else { return nil }
        let position = Int(slots[slot].position - 1)
        if isURL(position) { return position }
        return collisions.isEmpty ? nil : collisions[String(decoding: url, as: UTF8.self)].map(Int.init)
    }

    /// The position of `url` if it is recorded; else records it at `index` and returns nil.
    /// One digest and one probe.
    public mutating func insertIfAbsent(_ url: String, at index: Int, urlAt: (Int) -> String) -> Int? {
        insertIfAbsent(url, digest: digest(url), at: index, urlAt: urlAt)
    }

    /// `insertIfAbsent` of the URL whose UTF-8 bytes are `url` (`isURL` as for `find`).
    public mutating func insertIfAbsent(_ url: UnsafeRawBufferPointer, at index: Int, isURL: (Int) -> Bool) -> Int? {
        insert(digest: digester(url), at: index, isURL: isURL) { String(decoding: url, as: UTF8.self) }
    }

    /// `url`'s digest, for `insertIfAbsent(_:digest:at:urlAt:)`; starts loading the slot a probe
    /// reads first.
    func digest(_ url: String) -> UInt64 {
        var url = url
        let key = url.withUTF8 { digester(UnsafeRawBufferPointer($0)) }
        if !slots.isEmpty {
            let slot = home(Self.fold(key))
            slots.withUnsafeBufferPointer { worker_prefetch($0.baseAddress! + slot) }
        }
        return key
    }

    /// `insertIfAbsent` with the digest computed ahead (by `digest(_:)`).
    mutating func insertIfAbsent(_ url: String, digest key: UInt64, at index: Int, urlAt: (Int) -> String) -> Int? {
        insert(digest: key, at: index, isURL: { urlAt($0) == url }) { url }
    }

    /// Records `index` under `key` unless a position whose URL it is (`isURL`) is there; a digest
    /// shared by two URLs keeps the second by the URL itself (`text`).
    private mutating func insert(digest: UInt64, at index: Int, isURL: (Int) -> Bool, text: () -> String) -> Int? {
        reserve(count + 1)
        let key = Self.fold(digest)
        switch probe(key) {
        case .empty(let slot):
            fill(slot, key, index)
            return nil
        case .taken(let slot):
            let position = Int(slots[slot].position - 1)
            if isURL(position) { return position }
            let url = text()
            if let other = collisions[url] { return Int(other) }
            collisions[url] = Int32(index)
            return nil
        }
    }

    private enum Probe {
        case taken(Int)
        case empty(Int)
    }

    /// The slot holding `key`, else the empty slot where it would go.
    private func probe(_ key: UInt32) -> Probe {
        let mask = slots.count - 1
        var slot = home(key)
        while slots[slot].position != 0 {
            if slots[slot].digest == key { return .taken(slot) }
            slot = (slot + 1) & mask
        }
        return .empty(slot)
    }

    /// The first slot a probe for `key` reads.
    private func home(_ key: UInt32) -> Int {
        Int(truncatingIfNeeded: (UInt64(key) &* 0x9E37_79B9_7F4A_7C15) >> shift)
    }

    /// The 32 bits of a digest a slot keeps.
    private static func fold(_ digest: UInt64) -> UInt32 {
        UInt32(truncatingIfNeeded: digest ^ digest >> 32)
    }

    private mutating func fill(_ slot: Int, _ key: UInt32, _ index: Int) {
        slots[slot] = Slot(digest: key, position: Int32(index + 1))
        count += 1
    }

    /// Grows to a power of two of at least `minimumSlots` (and 16) and puts every digest back.
    private mutating func rehash(minimumSlots: Int) {
        var size = 16
        while size < minimumSlots { size *= 2 }
        let old = slots
        slots = [Slot](repeating: Slot(), count: size)
        shift = UInt64(64 - size.trailingZeroBitCount)
        count = 0
        for entry in old where entry.position != 0 {
            guard case .empty(let free) = probe(entry.digest) else { continue }
            fill(free, entry.digest, Int(entry.position - 1))
        }
    }

    /// A 64-bit digest of `bytes`, eight bytes a step (a byte a step, FNV-1a, was a large share
    /// of reading a million URLs), each step a multiply and a fold of the high bits down, then
    /// MurmurHash3's finalizer so every input bit reaches the bits a slot uses.
    public static func digest64(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        let multiplier: UInt64 = 0x9E37_79B9_7F4A_7C15
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        var offset = 0
        while offset + 8 <= bytes.count {
            hash = (hash ^ bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) &* multiplier
            hash ^= hash >> 32
            offset += 8
        }
        if offset < bytes.count {
            var tail: UInt64 = 0
            for index in offset..<bytes.count { tail |= UInt64(bytes[index]) << (8 * UInt64(index - offset)) }
            hash = (hash ^ tail) &* multiplier
            hash ^= hash >> 32
        }
        // The length last, in a step of its own: mixed in with the first word, one more zero
        // byte and a changed first bit cancelled out (a test has that case).
        hash = (hash ^ UInt64(bytes.count)) &* multiplier
        hash ^= hash >> 33
        hash &*= 0xff51_afd7_ed55_8ccd
        hash ^= hash >> 33
        hash &*= 0xc4ce_b9fe_1a85_ec53
        return hash ^ hash >> 33
    }
}
