import Testing
import WorkerTestSupport

@testable import WorkerManifest

@Suite(.hangLimit) struct ContentHashTests {
    @Test(arguments: [
        ("sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", HashAlgorithm.sha256),
        ("SHA256:9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08", .sha256),
        ("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", .sha256),
        ("sha256-n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg=", .sha256),
    ])
    func sha256Forms(text: String, algorithm: HashAlgorithm) throws {
        let hash = try ContentHash.parse(text).get()
        #expect(hash.algorithm == algorithm)
        #expect(hash.hex == sha256OfTest)
        #expect(hash.description == "sha256:" + sha256OfTest)
    }

    @Test func everyAlgorithmAndForm() throws {
        // Digests of "test".
        let md5 = "098f6bcd4621d373cade4e832627b4f6"
        let sha1 = "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3"
        let sha512 =
            "ee26b0dd4af7e749aa1a8ee3c10ae9923f618980772e473f8819a5d4940e0db27ac185f8a0e1d5f84f88bc887fd67b143732c304cc5fa9ad8e6f57f50028a8ff"
        #expect(try ContentHash.parse(md5).get() == ContentHash.parse("md5:" + md5).get())
        #expect(try ContentHash.parse(md5).get().algorithm == .md5)
        #expect(try ContentHash.parse(sha1).get().algorithm == .sha1)
        #expect(try ContentHash.parse("sha1:" + sha1.uppercased()).get().hex == sha1)
        #expect(try ContentHash.parse(sha512).get().algorithm == .sha512)
        #expect(try ContentHash.parse("sha512:" + sha512).get().hex == sha512)
        let sri384 = "sha384-doQSMg97CqWBL85CjcRwazyuUOAqZMqhangiSb/o78S37xzLEmJV0ZYEff7fF6Cp"
        let parsed384 = try ContentHash.parse(sri384).get()
        #expect(parsed384.algorithm == .sha384)
        #expect(parsed384.hex == "768412320f7b0aa5812fce428dc4706b3cae50e02a64caa16a782249bfe8efc4b7ef1ccb126255d196047dfedf17a0a9")
        let sri512 = "sha512-7iaw3Ur350mqGo7jwQrpkj9hiYB3Lkc/iBml1JQODbJ6wYX4oOHV+E+IvIh/1nsUNzLDBMxfqa2Ob1f1ACio/w=="
        #expect(try ContentHash.parse(sri512).get().hex == sha512)
    }

    @Test(arguments: [
        "sha256:abc",  // too short
        "sha256:zz86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",  // not hex
        "crc32:deadbeef",  // unknown algorithm
        // The colon form lists no sha384.
        "sha384:768412320f7b0aa5812fce428dc4706b3cae50e02a64caa16a782249bfe8efc4b7ef1ccb126255d196047dfedf17a0a9",
        "0123456789",  // bare hex of no known length
        "sha256-notbase64!!",  // SRI that is not base64
        "sha256-dGVzdA==",  // SRI of the wrong length
        "md5-CY9rzUYh03PK3k6DJie09g==",  // SRI names sha256/384/512 only
        "../../etc/passwd",  // traversal attempt
        "sha256:../../../../etc/passwd0000000000000000000000000000000000000000",
        "",
    ])
    func refused(text: String) {
        #expect(throws: HashParseError.self) { try ContentHash.parse(text).get() }
    }

    /// Equality is the whole digest's: a SHA-512 that differs in any one byte is another hash.
    @Test func hashesDifferingInAnyByteAreUnequal() {
        let base = [UInt8](repeating: 0xA5, count: 64)
        let hash = ContentHash(algorithm: .sha512, digest: base)
        #expect(hash == ContentHash(algorithm: .sha512, digest: base))
        for offset in 0..<64 {
            var other = base
            other[offset] ^= 1
            #expect(hash != ContentHash(algorithm: .sha512, digest: other), "byte \(offset)")
        }
        #expect(hash != ContentHash(algorithm: .sha256, digest: base.prefix(32)))
    }
}
