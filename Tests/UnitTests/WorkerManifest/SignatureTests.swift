import Crypto
import Foundation
import Testing
import WorkerTestSupport

@testable import WorkerManifest

/// The parts of signed manifests that need no tool: BLAKE2b against known digests (RFC 7693's
/// `abc`, and Python's hashlib for empty, one-block and multi-block inputs), the header fields
/// `serial` and `expires`, allowed-signers lines and their times, keys files with bad lines.
@Suite struct SignatureTests {
    @Test(arguments: [
        (
            [UInt8](),
            "786a02f742015903c6c6fd852552d272912f4740e15847618a86e217f71f5419d25e1031afee585313896444934eb04b903a685b1448b755d56f701afe9be2ce"
        ),
        (
            Array("abc".utf8),
            "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d17d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923"
        ),
        (
            [UInt8](repeating: 0, count: 128),
            "865939e120e6805438478841afb739ae4250cf372653078a065cdcfffca4caf798e6d462b65d658fc165782640eded70963449ae1500fb0f24981d7727e22c41"
        ),
        (
            Array((0..<512).map { UInt8($0 % 256) }),
            "c59ab1095ca4579525338b6b74689ff234bc3fe9765fe26dfb04ddceaee0ab84dfd8967594cb261fcd88687f4454d80f718116c1b3c32f9f7e169357468cbe67"
        ),
    ])
    func blake2bMatchesKnownDigests(message: [UInt8], hex: String) {
        #expect(BLAKE2b.hash512(message).map { String(format: "%02x", $0) }.joined() == hex)
    }

    @Test func serialAndExpiresAreReadWithTheirPositions() throws {
        let set = try load("version: 1\nserial: 7\nexpires: \"2030-01-02T03:04:05Z\"\nentries: []\n").get()
        #expect(set.manifests[0].serial == 7)
        #expect(set.manifests[0].expires == 1_893_553_445)
        #expect(set.manifests[0].serialPosition.line == 2 && set.manifests[0].serialPosition.column == 9)
        #expect(set.manifests[0].expiresPosition.line == 3 && set.manifests[0].expiresPosition.column == 10)
        #expect(problems("version: 1\nserial: -1\nentries: []\n") == ["2:9: 'serial' must be a non-negative integer, found '-1'"])
        #expect(
            problems("version: 1\nexpires: tomorrow\nentries: []\n")
                == ["2:10: 'expires' must be an RFC 3339 time such as 2026-12-31T23:59:59Z, found 'tomorrow'"])
        #expect(RFC3339.parse("2030-01-02T04:04:05+01:00") == 1_893_553_445)
    }

    @Test func stampedManifestsReadBack() throws {
        let yaml = ManifestWriter.stamped(
            ManifestWriter.yaml(name: "m", baseURL: "https://h/", items: []), serial: 3,
            expires: 1_893_553_445)
        #expect(yaml.contains("version: 1\nserial: 3\nexpires: \"2030-01-02T03:04:05Z\"\n"), "\(yaml)")
        let set = try load(yaml).get()
        #expect(set.manifests[0].serial == 3 && set.manifests[0].expires == 1_893_553_445)
    }

    @Test func allowedSignersLinesAndTimes() throws {
        let key = "AAAAC3NzaC1lZDI1NTE5AAAAIJZ0JtOYiOUmvxDsGMOsOcQs0VJXONt1KNlaTy7TjIDs"
        let plain = try SSHSignature.AllowedSigner.parse("ops@example.org ssh-ed25519 \(key) a comment").get()
        #expect(plain.principals == "ops@example.org" && plain.namespaces == nil && plain.keyType == "ssh-ed25519")
        let limited = try SSHSignature.AllowedSigner.parse(
            "\"a@x,b@y\" namespaces=\"worker-manifest,git\",valid-after=\"20240101\",valid-before=\"203001020304Z\" ssh-ed25519 \(key)"
        ).get()
        #expect(limited.namespaces == ["worker-manifest", "git"])
        #expect(limited.validAfter == 1_704_067_200)
        #expect(limited.validBefore == 1_893_553_440)
        #expect(limited.fingerprint.hasPrefix("SHA256:"))
        if case .success = SSHSignature.AllowedSigner.parse("x@y cert-authority ssh-ed25519 \(key)") {
            Issue.record("a cert-authority line was taken as a signer")
        }
        #expect(SSHSignature.AllowedSigner.time("20241301") == nil)
    }

    /// Lines `ssh-keygen -Y verify` refuses are refused, never read with their restriction dropped.
    @Test(arguments: [
        "valid-befor=\"20300101\"", "expiry-time=\"20300101\"", "valid-before=\"20300101\",valid-before=\"20990101\"",
        "namespaces=\"git\",namespaces=\"worker-manifest\"", "namespaces", "valid-after",
    ])
    func allowedSignersLinesSshKeygenRefusesAreRefused(options: String) {
        let key = "AAAAC3NzaC1lZDI1NTE5AAAAIJZ0JtOYiOUmvxDsGMOsOcQs0VJXONt1KNlaTy7TjIDs"
        if case .success(let signer) = SSHSignature.AllowedSigner.parse("ops@example.org \(options) ssh-ed25519 \(key)") {
            Issue.record(
                "accepted with namespaces \(String(describing: signer.namespaces)), valid before \(String(describing: signer.validBefore))")
        }
    }

    /// Key ids read as minisign prints them: the little-endian key number, upper-case, no leading zeros.
    @Test func minisignKeyIdsAreShownAsMinisignShowsThem() throws {
        let key = Curve25519.Signing.PrivateKey().publicKey.rawRepresentation
        let line = Data(Array("Ed".utf8) + [0x15, 0x02, 0x51, 0xE6, 0x16, 0x78, 0xBE, 0x00] + key).base64EncodedString()
        let parsed = try #require(Minisign.PublicKey(base64: line))
        #expect(parsed.id == "BE7816E6510215")
        let wrongAlgorithm = Data(Array("EX".utf8) + [0x15, 0x02, 0x51, 0xE6, 0x16, 0x78, 0xBE, 0x00] + key).base64EncodedString()
        #expect(Minisign.PublicKey(base64: wrongAlgorithm) == nil)
    }

    @Test func aKeysFileWithABadLineNamesIt() {
        let directory = TemporaryDirectory()
        let path = directory.write("keys", "# publisher\nuntrusted comment: minisign public key\nnot a key at all\n")
        var keys = TrustedKeys()
        do {
            try keys.load(path)
            Issue.record("a bad keys file was accepted")
        } catch {
            #expect(error.diagnostics.map { "\($0.line):\($0.column)" } == ["3:1"])
        }
        let empty = directory.write("empty", "# nothing\n")
        #expect(throws: ManifestErrors.self) { try keys.load(empty) }
    }
}
