import Crypto
import FoundationEssentials
import WorkerSupport

/// minisign's formats (Ed25519): a public key, and a detached signature with its trusted
/// comment. Both algorithms minisign writes verify: `Ed` (the file's bytes signed) and `ED`, its
/// default (their BLAKE2b-512 signed). The trusted comment is signed too (the global signature).
public enum Minisign {
    public struct PublicKey: Sendable, Equatable {
        /// minisign's key number: 8 bytes.
        let keyNumber: [UInt8]
        /// The Ed25519 key's 32 bytes.
        let keyBytes: [UInt8]

        public var id: String { Self.id(keyNumber) }

        var key: Curve25519.Signing.PublicKey? { try? Curve25519.Signing.PublicKey(rawRepresentation: keyBytes) }

        /// As minisign prints it (`%PRIX64` of the little-endian number: no leading zeros).
        static func id(_ number: [UInt8]) -> String {
            String(number.reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }, radix: 16, uppercase: true)
        }

        /// The base64 line of a public key file (`RW…`): "Ed", the key number, the key.
        public init?(base64 line: String) {
            guard let data = Data(base64Encoded: Text.trimmingWhitespace(line)), data.count == 42 else { return nil }
            let bytes = [UInt8](data)
            guard bytes[0] == UInt8(ascii: "E"), bytes[1] == UInt8(ascii: "d"),
                (try? Curve25519.Signing.PublicKey(rawRepresentation: bytes[10..<42])) != nil
            else { return nil }
            keyNumber = Array(bytes[2..<10])
            keyBytes = Array(bytes[10..<42])
        }
    }

    struct Signature {
        let prehashed: Bool
        let keyNumber: [UInt8]
        let signature: [UInt8]
        let trustedComment: String
        let globalSignature: [UInt8]

        /// The trusted comment's `file:` (`timestamp:…\tfile:NAME\t…`, minisign's default), if any.
        var signedFile: String? {
            let fields = trustedComment.split(separator: "\t")
            return fields.first { $0.hasPrefix("file:") }.map { String($0.dropFirst("file:".count)) }
        }

        /// A `.minisig` file: untrusted comment, signature line, trusted comment, global signature.
        static func parse(_ text: String) -> Result<Signature, SignatureProblem> {
            let lines = text.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "\n" || $0 == "\r" }).map(String.init)
            guard lines.count >= 4, lines[0].hasPrefix("untrusted comment:"), lines[2].hasPrefix("trusted comment: "),
                let line = Data(base64Encoded: lines[1]), line.count == 74,
                let global = Data(base64Encoded: lines[3]), global.count == 64
            else {
                return .failure(.malformed("not a minisign signature (untrusted comment, signature, trusted comment, global signature)"))
            }
            let bytes = [UInt8](line)
            let algorithm = String(decoding: bytes[0..<2], as: UTF8.self)
            guard algorithm == "Ed" || algorithm == "ED" else {
                return .failure(.malformed("a minisign signature of unknown algorithm '\(Redact.short(algorithm))'"))
            }
            return .success(
                Signature(
                    prehashed: algorithm == "ED", keyNumber: Array(bytes[2..<10]), signature: Array(bytes[10..<74]),
                    trustedComment: String(lines[2].dropFirst("trusted comment: ".count)),
                    globalSignature: [UInt8](global)))
        }
    }

    /// Checks `text` (a .minisig) over `message` against `keys`; the key that signed it, or why not.
    static func verify(_ message: [UInt8], signature text: String, keys: [PublicKey]) -> Result<SignatureCheck, SignatureProblem> {
        let signature: Signature
        switch Signature.parse(text) {
        case .success(let parsed): signature = parsed
        case .failure(let problem): return .failure(problem)
        }
        guard let key = keys.first(where: { $0.keyNumber == signature.keyNumber }) else {
            return .failure(.untrustedKey("minisign key \(PublicKey.id(signature.keyNumber))"))
        }
        let signed = signature.prehashed ? BLAKE2b.hash512(message) : message
        guard let publicKey = key.key, publicKey.isValidSignature(signature.signature, for: signed) else {
            return .failure(.invalid("minisign key \(key.id)"))
        }
        guard publicKey.isValidSignature(signature.globalSignature, for: signature.signature + Array(signature.trustedComment.utf8)) else {
            return .failure(.invalid("minisign key \(key.id) (its trusted comment)"))
        }
        return .success(SignatureCheck(signer: "minisign key \(key.id)", file: signature.signedFile))
    }
}
