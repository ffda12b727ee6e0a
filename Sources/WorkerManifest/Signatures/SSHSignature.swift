import Crypto
import FoundationEssentials
import WorkerSupport

/// OpenSSH's detached signatures (`ssh-keygen -Y sign -n worker-manifest`, PROTOCOL.sshsig) and
/// the allowed-signers file git uses to check them (`gpg.ssh.allowedSignersFile`; ssh-keygen(1),
/// "ALLOWED SIGNERS"). Keys: ssh-ed25519 and ecdsa-sha2-nistp256; others are named and refused.
public enum SSHSignature {
    /// The namespace a manifest's signature must be made in.
    static let namespace = "worker-manifest"

    /// One allowed-signers line: who, which key, and in which namespaces and times it may sign.
    public struct AllowedSigner: Sendable {
        let principals: String
        let keyType: String
        let keyBlob: [UInt8]
        let namespaces: [String]?
        let validAfter: Double?
        let validBefore: Double?

        /// `SHA256:…`, as ssh-keygen -l prints it.
        public var fingerprint: String {
            SSHSignature.fingerprint(keyBlob)
        }

        /// A line of the file (not a comment or blank); nil when it is not one.
        public static func parse(_ line: String) -> Result<AllowedSigner, SignatureProblem> {
            let fields = tokens(line)
            guard fields.count >= 3 else { return .failure(.malformed("an allowed-signers line needs principals, a key type and a key")) }
            var index = 1
            var options: [String: String] = [:]
            if !isKeyType(fields[1]) {
                // As strictly as `ssh-keygen -Y verify`: an option it does not know, one given twice,
                // or one without its value refuses the line (a restriction misspelled is not dropped).
                for option in splitOptions(fields[1]) {
                    let parts = option.split(separator: "=", maxSplits: 1).map(String.init)
                    let name = parts[0].lowercased()
                    guard Self.options.contains(name) else {
                        return .failure(.malformed("unknown option '\(Redact.short(parts[0]))' (ssh-keygen refuses the line)"))
                    }
                    guard options[name] == nil else { return .failure(.malformed("option '\(name)' given twice")) }
                    guard (parts.count > 1) == (name != "cert-authority") else {
                        return .failure(
                            .malformed(name == "cert-authority" ? "cert-authority takes no value" : "option '\(name)' needs a value"))
                    }
                    options[name] = parts.count > 1 ? unquote(parts[1]) : ""
                }
                index = 2
            }
            guard fields.count > index + 1 else { return .failure(.malformed("an allowed-signers line needs a key type and a key")) }
            if options["cert-authority"] != nil {
                return .failure(.malformed("cert-authority lines are not supported (list the signing keys themselves)"))
            }
            let type = fields[index]
            guard let data = Data(base64Encoded: fields[index + 1]) else { return .failure(.malformed("the key is not base64")) }
            var after: Double?
            var before: Double?
            if let text = options["valid-after"] {
                guard let time = time(text) else { return .failure(.malformed("valid-after=\"\(Redact.short(text))\" is not a time")) }
                after = time
            }
            if let text = options["valid-before"] {
                guard let time = time(text) else { return .failure(.malformed("valid-before=\"\(Redact.short(text))\" is not a time")) }
                before = time
            }
            return .success(
                AllowedSigner(
                    principals: fields[0], keyType: type, keyBlob: [UInt8](data),
                    namespaces: options["namespaces"].map { $0.split(separator: ",").map(String.init) },
                    validAfter: after, validBefore: before))
        }

        /// The options an allowed-signers line may have (ssh-keygen(1), ALLOWED SIGNERS).
        static let options: Set<String> = ["cert-authority", "namespaces", "valid-after", "valid-before"]

        static func isKeyType(_ field: String) -> Bool {
            field.hasPrefix("ssh-") || field.hasPrefix("ecdsa-") || field.hasPrefix("sk-")
        }

        /// Whitespace-separated fields; double quotes keep spaces (options, principals).
        static func tokens(_ line: String) -> [String] {
            var fields: [String] = []
            var current = ""
            var quoted = false
            for character in line {
                if character == "\"" { quoted.toggle(); current.append(character); continue }
                if !quoted, character == " " || character == "\t" {
                    if !current.isEmpty { fields.append(current); current = "" }
                    continue
                }
                current.append(character)
            }
            if !current.isEmpty { fields.append(current) }
            return fields
        }

        static func splitOptions(_ text: String) -> [String] {
            var options: [String] = []
            var current = ""
            var quoted = false
            for character in text {
                if character == "\"" { quoted.toggle() }
                if character == ",", !quoted { options.append(current); current = ""; continue }
                current.append(character)
            }
            options.append(current)
            return options.filter { !$0.isEmpty }
        }

        static func unquote(_ text: String) -> String {
            text.count >= 2 && text.hasPrefix("\"") && text.hasSuffix("\"") ? String(text.dropFirst().dropLast()) : text
        }

        /// `YYYYMMDD[HHMM[SS]][Z]` as UTC seconds (ssh-keygen reads an unmarked time as local;
        /// here every time is UTC).
        static func time(_ text: String) -> Double? {
            let digits = text.hasSuffix("Z") || text.hasSuffix("z") ? String(text.dropLast()) : text
            guard [8, 12, 14].contains(digits.count), digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber) else { return nil }
            let numbers = Array(digits)
            func part(_ from: Int, _ length: Int) -> Int { Int(String(numbers[from..<from + length])) ?? 0 }
            let (year, month, day) = (part(0, 4), part(4, 2), part(6, 2))
            guard (1...12).contains(month), (1...31).contains(day) else { return nil }
            let hour = digits.count >= 12 ? part(8, 2) : 0
            let minute = digits.count >= 12 ? part(10, 2) : 0
            let second = digits.count == 14 ? part(12, 2) : 0
            // Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
            let shifted = month <= 2 ? year - 1 : year
            let era = (shifted >= 0 ? shifted : shifted - 399) / 400
            let yearOfEra = shifted - era * 400
            let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
            let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
            let days = era * 146_097 + dayOfEra - 719_468
            return Double(days * 86_400 + hour * 3600 + minute * 60 + second)
        }
    }

    /// A key's `SHA256:…` fingerprint, as ssh-keygen -l prints it (base64 without padding).
    static func fingerprint(_ blob: [UInt8]) -> String {
        "SHA256:" + String(Data(SHA256.hash(data: blob)).base64EncodedString().prefix { $0 != "=" })
    }

    /// Checks an armored SSH signature over `message` against the allowed signers at `now`.
    static func verify(
        _ message: [UInt8], signature text: String, signers: [AllowedSigner],
        now: Double
    ) -> Result<String, SignatureProblem> {
        let body = text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }).map(String.init)
            .filter { !$0.hasPrefix("-----") }.joined()
        guard text.contains("-----BEGIN SSH SIGNATURE-----"), let data = Data(base64Encoded: body) else {
            return .failure(.malformed("not an SSH signature (-----BEGIN SSH SIGNATURE-----)"))
        }
        var reader = SSHReader([UInt8](data))
        guard reader.bytes(6) == Array("SSHSIG".utf8), let version = reader.uint32(), version == 1,
            let publicKey = reader.string(), let namespace = reader.string(), let reserved = reader.string(),
            let hashName = reader.string(), let signatureBlob = reader.string()
        else {
            return .failure(.malformed("an SSH signature that cannot be read (SSHSIG version 1)"))
        }
        let fingerprint = Self.fingerprint(publicKey)
        guard String(decoding: namespace, as: UTF8.self) == Self.namespace else {
            return .failure(
                .malformed(
                    "the signature by SSH key \(fingerprint) was made in namespace '\(Redact.short(String(decoding: namespace, as: UTF8.self)))', not '\(Self.namespace)' (sign with ssh-keygen -Y sign -n \(Self.namespace))"
                ))
        }
        guard let signer = signers.first(where: { $0.keyBlob == publicKey }) else {
            return .failure(.untrustedKey("SSH key \(fingerprint)"))
        }
        if let namespaces = signer.namespaces, !namespaces.contains(Self.namespace) {
            return .failure(.untrustedKey("SSH key \(fingerprint) (its allowed-signers line does not allow namespace \(Self.namespace))"))
        }
        if let after = signer.validAfter, now < after {
            return .failure(.untrustedKey("SSH key \(fingerprint) (not valid before its valid-after time)"))
        }
        if let before = signer.validBefore, now >= before {
            return .failure(.untrustedKey("SSH key \(fingerprint) (expired at its valid-before time)"))
        }
        let digest: [UInt8]
        switch String(decoding: hashName, as: UTF8.self) {
        case "sha512": digest = Array(SHA512.hash(data: message))
        case "sha256": digest = Array(SHA256.hash(data: message))
        default: return .failure(.malformed("an SSH signature with hash '\(Redact.short(String(decoding: hashName, as: UTF8.self)))'"))
        }
        var signed = Array("SSHSIG".utf8)
        for field in [namespace, reserved, hashName, digest] { signed += SSHReader.encoded(field) }
        var signatureReader = SSHReader(signatureBlob)
        var keyReader = SSHReader(publicKey)
        guard let signatureType = signatureReader.string(), let rawSignature = signatureReader.string(),
            let keyType = keyReader.string()
        else {
            return .failure(.malformed("an SSH signature that cannot be read"))
        }
        let name = "SSH key \(fingerprint) (\(signer.principals))"
        switch String(decoding: keyType, as: UTF8.self) {
        case "ssh-ed25519":
            guard String(decoding: signatureType, as: UTF8.self) == "ssh-ed25519", let raw = keyReader.string(),
                let key = try? Curve25519.Signing.PublicKey(rawRepresentation: raw)
            else {
                return .failure(.malformed("an ssh-ed25519 signature that cannot be read"))
            }
            return key.isValidSignature(rawSignature, for: signed) ? .success(name) : .failure(.invalid(name))
        case "ecdsa-sha2-nistp256":
            var pair = SSHReader(rawSignature)
            guard String(decoding: signatureType, as: UTF8.self) == "ecdsa-sha2-nistp256", keyReader.string() != nil,
                let point = keyReader.string(), let key = try? P256.Signing.PublicKey(x963Representation: point),
                let r = pair.string(), let s = pair.string(),
                let signature = try? P256.Signing.ECDSASignature(rawRepresentation: SSHReader.scalar(r) + SSHReader.scalar(s))
            else {
                return .failure(.malformed("an ecdsa-sha2-nistp256 signature that cannot be read"))
            }
            return key.isValidSignature(signature, for: signed) ? .success(name) : .failure(.invalid(name))
        case let other:
            return .failure(.malformed("SSH key type '\(Redact.short(other))' is not supported (use ssh-ed25519 or ecdsa-sha2-nistp256)"))
        }
    }
}

/// SSH wire format: uint32 big-endian lengths before strings (RFC 4251 §5).
struct SSHReader {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func bytes(_ count: Int) -> [UInt8]? {
        guard count >= 0, bytes.count - offset >= count else { return nil }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    mutating func uint32() -> UInt32? {
        bytes(4).map { $0.reduce(0) { $0 << 8 | UInt32($1) } }
    }

    mutating func string() -> [UInt8]? {
        guard let length = uint32(), length <= 1 << 24 else { return nil }
        return bytes(Int(length))
    }

    static func encoded(_ field: [UInt8]) -> [UInt8] {
        let length = UInt32(field.count)
        return [
            UInt8(length >> 24), UInt8(truncatingIfNeeded: length >> 16), UInt8(truncatingIfNeeded: length >> 8),
            UInt8(truncatingIfNeeded: length),
        ] + field
    }

    /// An mpint as a 32-byte big-endian scalar (its sign byte dropped, short ones padded).
    static func scalar(_ mpint: [UInt8]) -> [UInt8] {
        let trimmed = Array(mpint.drop { $0 == 0 })
        return trimmed.count >= 32 ? Array(trimmed.suffix(32)) : [UInt8](repeating: 0, count: 32 - trimmed.count) + trimmed
    }
}
