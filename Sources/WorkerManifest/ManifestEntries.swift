/// The entries of a manifest set as a run holds them: one fixed-size value per entry (where its
/// URL lies, its hash's algorithm, the manifest and place that listed it) and one byte buffer for
/// every entry's URL and digest. A `ManifestEntry` (a `String` URL and an inline 64-byte digest)
/// costs ~120 bytes plus its URL's allocation; here 32 bytes plus the URL's and the digest's own
/// bytes, and a million entries are read without a string each. Entries are made as they are read
/// (`self[i]`); `withURL(at:)` and `hash(at:)` read one field.
public struct ManifestEntries: RandomAccessCollection, ExpressibleByArrayLiteral, Equatable, Sendable {
    /// One entry's fixed part.
    private struct Fixed {
        /// Where the entry's URL starts in `text`; its digest (if any) follows the URL.
        var start: Int
        var urlCount: UInt32
        var manifest: UInt32
        var line: UInt32
        var column: UInt32
        /// 0: no hash; else the algorithm's place in `HashAlgorithm.allCases` + 1.
        var algorithm: UInt8
        var hasMirrors: Bool
    }

    private var fixed: [Fixed] = []
    private var text: [UInt8] = []
    /// The `mirrors` of the few entries that list them, by position.
    private var mirrorLists: [Int32: [String]] = [:]

    public init() {}

    public init(_ entries: some Sequence<ManifestEntry>) {
        for entry in entries { append(entry) }
    }

    public init(arrayLiteral entries: ManifestEntry...) {
        self.init(entries)
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { fixed.count }

    /// The entry at `position`, its strings made now.
    public subscript(position: Int) -> ManifestEntry {
        ManifestEntry(
            url: url(at: position), hash: hash(at: position), manifest: Int(fixed[position].manifest),
            line: Int(fixed[position].line), column: Int(fixed[position].column), mirrors: mirrors(at: position))
    }

    public func url(at position: Int) -> String {
        withURL(at: position) { String(decoding: $0, as: UTF8.self) }
    }

    /// Calls `body` with the URL's UTF-8 bytes, in place.
    public func withURL<T>(at position: Int, _ body: (UnsafeRawBufferPointer) -> T) -> T {
        let entry = fixed[position]
        return text.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[entry.start..<entry.start + Int(entry.urlCount)])) }
    }

    /// The position of the manifest that listed the entry at `position`.
    public func manifest(at position: Int) -> Int {
        Int(fixed[position].manifest)
    }

    public func hash(at position: Int) -> ContentHash? {
        let entry = fixed[position]
        guard entry.algorithm > 0 else { return nil }
        let algorithm = HashAlgorithm.allCases[Int(entry.algorithm) - 1]
        let digest = entry.start + Int(entry.urlCount)
        return ContentHash(algorithm: algorithm, digest: text[digest..<digest + algorithm.byteCount])
    }

    public func mirrors(at position: Int) -> [String] {
        fixed[position].hasMirrors ? mirrorLists[Int32(position)] ?? [] : []
    }

    /// Makes room for `count` entries and `textBytes` of URLs and digests (pages not yet written
    /// cost no memory).
    public mutating func reserve(_ count: Int, textBytes: Int) {
        fixed.reserveCapacity(count)
        text.reserveCapacity(textBytes)
    }

    public mutating func append(_ entry: ManifestEntry) {
        append(
            url: entry.url, hash: entry.hash, manifest: entry.manifest, line: entry.line, column: entry.column,
            mirrors: entry.mirrors)
    }

    public mutating func append(url: String, hash: ContentHash?, manifest: Int, line: Int, column: Int, mirrors: [String]) {
        let start = text.count
        text.append(contentsOf: url.utf8)
        let urlCount = text.count - start
        appendDigest(hash)
        fixed.append(
            Fixed(
                start: start, urlCount: UInt32(urlCount), manifest: UInt32(manifest),
                line: UInt32(clamping: line), column: UInt32(clamping: column),
                algorithm: Self.code(hash), hasMirrors: false))
        setMirrors(mirrors, at: fixed.count - 1)
    }

    /// Gives the entry at `position` a hash (it had none) and `mirrors` in place of its own. Its URL
    /// is written again with the digest after it (the old bytes stay unused: this is rare).
    mutating func setHash(_ hash: ContentHash, mirrors: [String], at position: Int) {
        let url = url(at: position)
        let start = text.count
        text.append(contentsOf: url.utf8)
        appendDigest(hash)
        fixed[position].start = start
        fixed[position].algorithm = Self.code(hash)
        setMirrors(mirrors, at: position)
    }

    /// Adds `mirrors` after the entry's own (those it lists already are skipped).
    mutating func addMirrors(_ mirrors: [String], at position: Int) {
        let own = self.mirrors(at: position)
        setMirrors(own + mirrors.filter { !own.contains($0) }, at: position)
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.elementsEqual(rhs)
    }

    private mutating func appendDigest(_ hash: ContentHash?) {
        hash?.withDigest { text.append(contentsOf: $0) }
    }

    private mutating func setMirrors(_ mirrors: [String], at position: Int) {
        fixed[position].hasMirrors = !mirrors.isEmpty
        mirrorLists[Int32(position)] = mirrors.isEmpty ? nil : mirrors
    }

    private static func code(_ hash: ContentHash?) -> UInt8 {
        guard let hash, let place = HashAlgorithm.allCases.firstIndex(of: hash.algorithm) else { return 0 }
        return UInt8(place + 1)
    }
}
