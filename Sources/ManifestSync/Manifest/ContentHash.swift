import Foundation

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

/// An expected content digest, normalized to algorithm + lowercase hex whatever form the manifest used.
public struct ContentHash: Hashable, Sendable, CustomStringConvertible {
    public let algorithm: HashAlgorithm
    /// Lowercase hex of the digest; always `algorithm.byteCount * 2` characters of `[0-9a-f]`.
    public let hex: String

    public init(algorithm: HashAlgorithm, digest: some Sequence<UInt8>) {
        self.algorithm = algorithm
        self.hex = Hex.encode(digest)
    }

    /// Normalized form, `sha256:9f86…`; the form the index and the report use.
    public var description: String { "\(algorithm.rawValue):\(hex)" }

    /// Parses every form PRODUCT.md allows: `ALGO:HEX`, bare hex whose length names the algorithm,
    /// and SRI `ALGO-BASE64`. Returns a message (no location) for anything else.
    public static func parse(_ text: String) -> Result<ContentHash, HashParseError> {
        if let colon = text.firstIndex(of: ":") {
            let name = text[..<colon].lowercased()
            let digest = String(text[text.index(after: colon)...])
            guard let algorithm = HashAlgorithm(rawValue: name), algorithm != .sha384 else {
                return .failure(.init("unknown hash algorithm '\(Redact.short(String(text[..<colon])))' (expected sha256, sha512, sha1 or md5)"))
            }
            return fromHex(digest, algorithm: algorithm)
        }
        if let dash = text.firstIndex(of: "-") {
            let name = text[..<dash].lowercased()
            guard let algorithm = HashAlgorithm(rawValue: name),
                  [.sha256, .sha384, .sha512].contains(algorithm)
            else {
                return .failure(.init("unknown SRI hash algorithm '\(Redact.short(String(text[..<dash])))' (expected sha256, sha384 or sha512)"))
            }
            let encoded = String(text[text.index(after: dash)...])
            guard let bytes = Data(base64Encoded: encoded), bytes.count == algorithm.byteCount else {
                return .failure(.init("SRI hash '\(Redact.short(text))' is not \(algorithm.byteCount) bytes of base64"))
            }
            return .success(ContentHash(algorithm: algorithm, digest: bytes))
        }
        guard let algorithm = HashAlgorithm.forBareHex(length: text.utf8.count) else {
            return .failure(.init("bare hex hash of \(text.utf8.count) characters (expected 32 md5, 40 sha1, 64 sha256 or 128 sha512)"))
        }
        return fromHex(text, algorithm: algorithm)
    }

    private static func fromHex(_ digest: String, algorithm: HashAlgorithm) -> Result<ContentHash, HashParseError> {
        guard digest.utf8.count == algorithm.byteCount * 2 else {
            return .failure(.init("\(algorithm.rawValue) hash needs \(algorithm.byteCount * 2) hex digits, got \(digest.utf8.count)"))
        }
        guard let bytes = Hex.decode(digest) else {
            return .failure(.init("\(algorithm.rawValue) hash has a character that is not hex"))
        }
        return .success(ContentHash(algorithm: algorithm, digest: bytes))
    }
}

/// Why a hash field was refused.
public struct HashParseError: Error, Sendable, Equatable {
    public let message: String
    init(_ message: String) { self.message = message }
}

/// Lowercase hex encoding and strict decoding.
enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var out = [UInt8]()
        out.reserveCapacity(128)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes case-insensitive hex; nil for odd length or any other character.
    static func decode(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = value(utf8[index]), let low = value(utf8[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    /// True when `text` is exactly `length` lowercase hex digits (a safe object file name).
    static func isLowercaseHex(_ text: String, length: Int) -> Bool {
        text.utf8.count == length && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    private static func value(_ char: UInt8) -> UInt8? {
        switch char {
        case 48...57: char - 48
        case 65...70: char - 55
        case 97...102: char - 87
        default: nil
        }
    }
}
