import Crypto
import Foundation
import Glibc
import Testing
import WorkerKinds
import WorkerTestSupport

@testable import WorkerStore
@testable import WorkerSupport

/// How a group-shared cache keys URLs with user info: no credential in the key, one key per URL.
@Suite(.hangLimit) struct CredentialFreeURLTests {
    init() { Kinds.install() }

    static let secret = [UInt8](repeating: 7, count: 32)

    @Test func userInfoIsReplacedByItsKeyedDigest() {
        func key(_ url: String, secret: [UInt8]? = Self.secret) -> String { CredentialFreeURL.key(url, secret: secret) }
        let made = key("https://alice:s3cret@cdn.example.com/a.png?x=1")
        #expect(!made.contains("s3cret") && !made.contains("alice"))
        #expect(made.hasPrefix("https://~") && made.hasSuffix("@cdn.example.com/a.png?x=1"))
        #expect(CredentialFreeURL.isKey(made))
        #expect(key(made) == made, "a key stays itself")
        #expect(key("https://bob:s3cret@cdn.example.com/a.png?x=1") != made, "another user, another row")
        #expect(key("https://alice:other@cdn.example.com/a.png?x=1") != made)
        // Keyed: the plain SHA-256 of the user info (what a guess could be tested against) is not it,
        // another cache's secret gives another key, and without the secret nothing matches.
        let plain = Hex.encode(Array(SHA256.hash(data: Array("alice:s3cret".utf8)).prefix(16)))
        #expect(!made.contains(plain))
        #expect(key("https://alice:s3cret@cdn.example.com/a.png?x=1", secret: [UInt8](repeating: 8, count: 32)) != made)
        #expect(key("https://alice:s3cret@cdn.example.com/a.png?x=1", secret: nil) != made)
    }

    @Test func urlsWithoutUserInfoAreTheirOwnKey() {
        for url in [
            "https://cdn.example.com/a.png", "https://cdn.example.com/p@th/a.png", "https://cdn.example.com/a?u=b@c",
            "file:///srv/a.png", "http://127.0.0.1:8080/x#y@z",
        ] {
            #expect(CredentialFreeURL.key(url, secret: Self.secret) == url)
            #expect(!CredentialFreeURL.isKey(url))
        }
    }

    /// User info is looked for only in the authority (between `://` and the path, query or
    /// fragment), read from a string and from its bytes alike.
    @Test func userInfoIsFoundInTheAuthorityOnly() {
        let carrying = ["https://alice:s3cret@cdn.example.com/a.png", "http://u@h", "HTTP://a@b@h:8080/x", "s3://k:s@bucket/key"]
        let plain = [
            "https://cdn.example.com/p@th/a.png", "https://cdn.example.com/a?u=b@c", "http://127.0.0.1:8080/x#y@z",
            "file:///srv/a@b.png", "no scheme@here", "", "://",
        ]
        for url in carrying + plain {
            let expected = carrying.contains(url)
            #expect(CredentialFreeURL.hasUserInfo(url) == expected, "\(url)")
            #expect(Array(url.utf8).withUnsafeBytes { CredentialFreeURL.hasUserInfo($0) } == expected, "\(url)")
        }
    }

    /// The index of a shared cache keys every write and read the same way.
    @Test func aSharedIndexMatchesTheURLItWasGiven() throws {
        let directory = TemporaryDirectory()
        let root = directory.path + "/cache"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        chmod(root, 0o2750)
        let index = try CacheIndex(path: root + "/index.sqlite", create: true)
        #expect(index.credentialFree)
        let url = "https://u:pw@h/a"
        try index.apply(
            upserts: [
                IndexRecord(
                    url: url, hash: nil, object: String(repeating: "a", count: 64), size: 1,
                    fetchedAt: 1, lastUsed: 1)
            ], touches: [], removals: [], at: 1)
        #expect(try index.record(url: url) != nil)
        #expect(try index.allRecords().map(\.url) == [CredentialFreeURL.key(url, secret: index.credentialKey)])
        // The secret is the owner's alone.
        var info = stat()
        #expect(stat(root + "/credential-key", &info) == 0 && info.st_mode & 0o777 == 0o600 && info.st_size == 32)
        #expect(try CacheIndex(path: root + "/index.sqlite", create: true).credentialKey == index.credentialKey, "made once")
        try index.apply(upserts: [], touches: [], removals: [url], at: 2)
        #expect(try index.allRecords().isEmpty)
    }
}
