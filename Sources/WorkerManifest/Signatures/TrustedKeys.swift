import FoundationEssentials
import WorkerSupport

/// The publishers a run trusts (`--trusted-keys FILE`, `WORKER_TRUSTED_KEYS`): minisign public
/// keys (the `.pub` file minisign writes, or its `RW…` line) and SSH allowed-signers lines, in any
/// number of files. With keys, every manifest must carry a signature one of them made.
public struct TrustedKeys: Sendable {
    public private(set) var minisign: [Minisign.PublicKey] = []
    public private(set) var sshSigners: [SSHSignature.AllowedSigner] = []

    public init() {}

    public var isEmpty: Bool { minisign.isEmpty && sshSigners.isEmpty }

    /// Reads a keys file; a line that is neither a minisign key nor an allowed signer is an
    /// error naming `path:line`.
    public mutating func load(_ path: String) throws(ManifestErrors) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ManifestErrors(
                diagnostics: [
                    ManifestDiagnostic(
                        path: path, line: 0, column: 0,
                        message: "cannot read the trusted keys file", kind: .unreadable)
                ],
                truncated: false)
        }
        var diagnostics: [ManifestDiagnostic] = []
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        for (offset, raw) in lines.enumerated() {
            let line = Text.trimmingWhitespace(raw)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix("untrusted comment:") { continue }
            if let key = Minisign.PublicKey(base64: line) {
                minisign.append(key)
                continue
            }
            switch SSHSignature.AllowedSigner.parse(line) {
            case .success(let signer): sshSigners.append(signer)
            case .failure(let problem):
                diagnostics.append(
                    ManifestDiagnostic(
                        path: path, line: offset + 1, column: 1,
                        message: "neither a minisign public key nor an allowed-signers line: \(problem.message)"))
            }
        }
        if isEmpty, diagnostics.isEmpty {
            diagnostics.append(ManifestDiagnostic(path: path, line: 0, column: 0, message: "the trusted keys file holds no key"))
        }
        guard diagnostics.isEmpty else { throw ManifestErrors(diagnostics: diagnostics, truncated: false) }
    }

    /// The signature files to look for beside a manifest, in order: `NAME.minisig` when minisign
    /// keys are trusted, `NAME.sig` (ssh-keygen's name) when SSH keys are.
    public var signatureSuffixes: [String] {
        (minisign.isEmpty ? [] : [".minisig"]) + (sshSigners.isEmpty ? [] : [".sig"])
    }

    /// What an error names as the keys it expected.
    public var expected: String {
        let names = minisign.map { "minisign key \($0.id)" } + sshSigners.map { "SSH key \($0.fingerprint) (\($0.principals))" }
        let shown = names.prefix(4).joined(separator: ", ")
        return names.count > 4 ? shown + " or \(names.count - 4) more" : shown
    }

    /// Checks `signature` (a .minisig or an armored SSH signature) over `message`.
    public func verify(
        _ message: [UInt8], signature: [UInt8], now: Double = Date().timeIntervalSince1970
    ) -> Result<SignatureCheck, SignatureProblem> {
        let text = String(decoding: signature, as: UTF8.self)
        if text.contains("-----BEGIN SSH SIGNATURE-----") {
            guard !sshSigners.isEmpty else { return .failure(.untrustedKey("an SSH key (no SSH key is trusted)")) }
            return SSHSignature.verify(message, signature: text, signers: sshSigners, now: now).map {
                SignatureCheck(signer: $0, file: nil)
            }
        }
        guard !minisign.isEmpty else {
            return text.hasPrefix("untrusted comment:")
                ? .failure(.untrustedKey("a minisign key (no minisign key is trusted)"))
                : .failure(.malformed("not a minisign or SSH signature"))
        }
        return Minisign.verify(message, signature: text, keys: minisign)
    }
}

/// A signature that verified: the key that made it, and the file name it names (minisign's
/// trusted comment `file:`, as `minisign -S` writes it), if any.
public struct SignatureCheck: Sendable, Equatable {
    public let signer: String
    public let file: String?
}
