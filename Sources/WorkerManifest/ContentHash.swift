import FoundationEssentials
import Glibc
import WorkerSupport

/// A digest algorithm a manifest may name.
public enum HashAlgorithm: String, Sendable, CaseIterable, Codable {
    case md5, sha1, sha256, sha384, sha512

    /// Digest length in bytes.
    public var byteCount: Int {
        switch self {
        case .md5: 16
        case .sha1: 20
        case .sha256: 32
        case .sha384: 48
        case .sha512: 64
        }
    }

    /// The algorithm named by `name`, compared case-insensitively without allocating.
    init?(named name: Substring.UTF8View) {
        guard
            let match = HashAlgorithm.allCases.first(where: { algorithm in
                algorithm.rawValue.utf8.count == name.count
                    && zip(algorithm.rawValue.utf8, name).allSatisfy { $0 == ((65...90).contains($1) ? $1 | 0x20 : $1) }
            })
        else { return nil }
        self = match
    }

    /// The algorithm that a bare hex digest of `hexLength` characters names.
    static func forBareHex(length hexLength: Int) -> HashAlgorithm? {
        switch hexLength {
        case 32: .md5
        case 40: .sha1
        case 64: .sha256
        case 128: .sha512
        default: nil
        }
    }
}

/// An expected content digest, normalized to algorithm + digest whatever form the manifest used.
/// The digest is stored inline (no allocation per entry: manifests may list a million of them).
public struct ContentHash: Hashable, Sendable, CustomStringConvertible {
    public let algorithm: HashAlgorithm
    private let storage: DigestStorage

    public init(algorithm: HashAlgorithm, digest: some Sequence<UInt8>) {
        self.algorithm = algorithm
        storage = DigestStorage(digest)
    }

    /// The digest bytes (`algorithm.byteCount` of them).
    public var bytes: [UInt8] { storage.prefix(algorithm.byteCount) }

    /// Calls `body` with the digest bytes in place.
    public func withDigest<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        storage.withBytes { body(UnsafeRawBufferPointer(rebasing: $0.prefix(algorithm.byteCount))) }
    }

    /// Lowercase hex of the digest: `algorithm.byteCount * 2` characters of `[0-9a-f]`.
    public var hex: String { text(prefix: "") }

    /// Normalized form, `sha256:9f86…`; the form the index and the report use.
    public var description: String { text(prefix: algorithm.rawValue + ":") }

    /// `prefix` and the digest's hex, written into one new string (every synced row names its
    /// hash: no intermediate array or string).
    private func text(prefix: String) -> String {
        let prefix = prefix.utf8
        let count = algorithm.byteCount
        return String(unsafeUninitializedCapacity: prefix.count + count * 2) { out in
            let start = out.initialize(fromContentsOf: prefix)
            return storage.withBytes { digest in
                Hex.encode(UnsafeRawBufferPointer(rebasing: digest.prefix(count)), into: out, at: start)
            }
        }
    }

    /// True when `text` is exactly `hex` (lowercase), compared without building a string.
    func hasHex(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { hasHex(digits: UnsafeRawBufferPointer($0)) }
    }

    private func hasHex(digits: UnsafeRawBufferPointer) -> Bool {
        let count = algorithm.byteCount
        guard digits.count == count * 2 else { return false }
        return storage.withBytes { digest in
            for offset in 0..<count {
                let byte = digest[offset]
                guard digits[offset * 2] == Hex.lowercaseDigit(byte >> 4),
                    digits[offset * 2 + 1] == Hex.lowercaseDigit(byte & 0x0f)
                else { return false }
            }
            return true
        }
    }

    /// True when `text` is this hash's normalized form (`description`), compared in place.
    public func isDescribed(by text: String) -> Bool {
        var text = text
        let name = algorithm.rawValue.utf8
        return text.withUTF8 { utf8 in
            guard utf8.count == name.count + 1 + algorithm.byteCount * 2, utf8[name.count] == UInt8(ascii: ":"),
                name.elementsEqual(utf8[..<name.count])
            else { return false }
            return hasHex(digits: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: utf8[(name.count + 1)...])))
        }
    }

    /// The common form, `sha256:` and 64 lowercase hex digits, decoded in one pass; nil for
    /// anything else (which `parse` then handles, errors included).
    private static func parseCanonicalSHA256(_ text: String) -> ContentHash? {
        var text = text
        let storage: DigestStorage? = text.withUTF8 { utf8 in
            guard utf8.count == 71, utf8[0] == UInt8(ascii: "s"), utf8[1] == UInt8(ascii: "h"), utf8[2] == UInt8(ascii: "a"),
                utf8[3] == UInt8(ascii: "2"), utf8[4] == UInt8(ascii: "5"), utf8[5] == UInt8(ascii: "6"),
                utf8[6] == UInt8(ascii: ":")
            else { return nil }
            return DigestStorage.fromLowercaseHex(UnsafeBufferPointer(rebasing: utf8[7...]))
        }
        return storage.map { ContentHash(algorithm: .sha256, storage: $0) }
    }

    /// Parses every form docs/MANIFEST.md allows: `ALGO:HEX`, bare hex whose length names the algorithm,
    /// and SRI `ALGO-BASE64`. Returns a message (no location) for anything else.
    public static func parse(_ text: String) -> Result<ContentHash, HashParseError> {
        if let hash = parseCanonicalSHA256(text) { return .success(hash) }
        let utf8 = text.utf8
        if let colon = utf8.firstIndex(of: UInt8(ascii: ":")) {
            guard let algorithm = HashAlgorithm(named: utf8[..<colon]), algorithm != .sha384 else {
                let name = String(decoding: utf8[..<colon], as: UTF8.self)
                return .failure(.init("unknown hash algorithm '\(Redact.short(name))' (expected sha256, sha512, sha1 or md5)"))
            }
            return fromHex(utf8[utf8.index(after: colon)...], algorithm: algorithm)
        }
        if let dash = utf8.firstIndex(of: UInt8(ascii: "-")) {
            let name = String(decoding: utf8[..<dash], as: UTF8.self)
            guard let algorithm = HashAlgorithm(rawValue: name.lowercased()),
                [.sha256, .sha384, .sha512].contains(algorithm)
            else {
                return .failure(.init("unknown SRI hash algorithm '\(Redact.short(name))' (expected sha256, sha384 or sha512)"))
            }
            let encoded = String(decoding: utf8[utf8.index(after: dash)...], as: UTF8.self)
            guard let bytes = Data(base64Encoded: encoded), bytes.count == algorithm.byteCount else {
                return .failure(.init("SRI hash '\(Redact.short(text))' is not \(algorithm.byteCount) bytes of base64"))
            }
            return .success(ContentHash(algorithm: algorithm, digest: bytes))
        }
        guard let algorithm = HashAlgorithm.forBareHex(length: utf8.count) else {
            return .failure(.init("bare hex hash of \(utf8.count) characters (expected 32 md5, 40 sha1, 64 sha256 or 128 sha512)"))
        }
        return fromHex(utf8[...], algorithm: algorithm)
    }

    /// Parses a hash as the index stores it (`description`: `ALGO:HEX` for every algorithm,
    /// sha384 included, which a manifest can only spell in SRI form). nil for anything else: a
    /// stored hash that does not parse marks its row as damaged, it never turns verification off.
    public static func parseStored(_ text: String) -> ContentHash? {
        if let hash = parseCanonicalSHA256(text) { return hash }
        let utf8 = text.utf8
        guard let colon = utf8.firstIndex(of: UInt8(ascii: ":")),
            let algorithm = HashAlgorithm(named: utf8[..<colon]),
            case .success(let hash) = fromHex(utf8[utf8.index(after: colon)...], algorithm: algorithm),
            hash.description == text
        else { return nil }
        return hash
    }

    private static func fromHex(_ digest: Substring.UTF8View, algorithm: HashAlgorithm) -> Result<ContentHash, HashParseError> {
        guard digest.count == algorithm.byteCount * 2 else {
            return .failure(.init("\(algorithm.rawValue) hash needs \(algorithm.byteCount * 2) hex digits, got \(digest.count)"))
        }
        guard let storage = DigestStorage.fromHex(digest) else {
            return .failure(.init("\(algorithm.rawValue) hash has a character that is not hex"))
        }
        return .success(ContentHash(algorithm: algorithm, storage: storage))
    }

    private init(algorithm: HashAlgorithm, storage: DigestStorage) {
        self.algorithm = algorithm
        self.storage = storage
    }
}

/// Up to 64 digest bytes held inline; unused bytes are zero, so equality and hashing of the
/// whole value are those of the digest.
private struct DigestStorage: Hashable, Sendable {
    private var words: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)

    init(_ bytes: some Sequence<UInt8>) {
        withUnsafeMutableBytes(of: &words) { raw in
            for (offset, byte) in bytes.prefix(64).enumerated() { raw[offset] = byte }
        }
    }

    /// Decodes case-insensitive hex (at most 128 digits, even count); nil for any other character.
    static func fromHex(_ hex: Substring.UTF8View) -> DigestStorage? {
        guard hex.count % 2 == 0, hex.count <= 128 else { return nil }
        var storage = DigestStorage([])
        let decoded: Bool? = hex.withContiguousStorageIfAvailable { digits in
            withUnsafeMutableBytes(of: &storage.words) { Hex.decode(digits, into: $0) }
        }
        switch decoded {
        case true?: return storage
        case false?: return nil
        case nil: return Hex.decode(String(Substring(hex))).map { DigestStorage($0) }
        }
    }

    /// Decodes lowercase hex digits only (up to 128); nil for anything else.
    static func fromLowercaseHex(_ digits: UnsafeBufferPointer<UInt8>) -> DigestStorage? {
        guard digits.count % 2 == 0, digits.count <= 128 else { return nil }
        var storage = DigestStorage([])
        let valid = withUnsafeMutableBytes(of: &storage.words) { raw in
            Hex.decodeLowercase(UnsafeRawBufferPointer(digits), into: UnsafeMutableRawBufferPointer(rebasing: raw[..<(digits.count / 2)]))
        }
        return valid ? storage : nil
    }

    func withBytes<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        withUnsafeBytes(of: words, body)
    }

    func prefix(_ count: Int) -> [UInt8] {
        withUnsafeBytes(of: words) { Array($0.prefix(count)) }
    }

    /// Word by word (a byte sequence's `elementsEqual` cost 1,800 instructions a comparison, one
    /// per entry of a sync).
    static func == (lhs: Self, rhs: Self) -> Bool {
        let (l, r) = (lhs.words, rhs.words)
        return l.0 == r.0 && l.1 == r.1 && l.2 == r.2 && l.3 == r.3 && l.4 == r.4 && l.5 == r.5 && l.6 == r.6 && l.7 == r.7
    }

    func hash(into hasher: inout Hasher) {
        withUnsafeBytes(of: words) { hasher.combine(bytes: $0) }
    }
}

/// Why a hash field was refused.
public struct HashParseError: Error, Sendable, Equatable {
    public let message: String
    init(_ message: String) { self.message = message }
}
