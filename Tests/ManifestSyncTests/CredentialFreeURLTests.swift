import Foundation
import Glibc
import Testing
@testable import ManifestSync
import WorkerTestSupport

/// How a group-shared cache keys URLs with user info: no credential in the key, one key per URL.
@Suite struct CredentialFreeURLTests {
    @Test func userInfoIsReplacedByItsDigest() {
        let key = CredentialFreeURL.key("https://alice:s3cret@cdn.example.com/a.png?x=1")
        #expect(!key.contains("s3cret") && !key.contains("alice"))
        #expect(key.hasPrefix("https://~") && key.hasSuffix("@cdn.example.com/a.png?x=1"))
        #expect(CredentialFreeURL.isKey(key))
        #expect(CredentialFreeURL.key(key) == key, "a key stays itself")
        #expect(CredentialFreeURL.key("https://bob:s3cret@cdn.example.com/a.png?x=1") != key, "another user, another row")
        #expect(CredentialFreeURL.key("https://alice:other@cdn.example.com/a.png?x=1") != key)
    }

    @Test func urlsWithoutUserInfoAreTheirOwnKey() {
        for url in ["https://cdn.example.com/a.png", "https://cdn.example.com/p@th/a.png", "https://cdn.example.com/a?u=b@c",
                    "file:///srv/a.png", "http://127.0.0.1:8080/x#y@z"] {
            #expect(CredentialFreeURL.key(url) == url)
            #expect(!CredentialFreeURL.isKey(url))
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
        try index.apply(upserts: [IndexRecord(url: url, hash: nil, object: String(repeating: "a", count: 64), size: 1,
                                              fetchedAt: 1, lastUsed: 1)], touches: [], removals: [], at: 1)
        #expect(try index.record(url: url) != nil)
        #expect(try index.allRecords().map(\.url) == [CredentialFreeURL.key(url)])
        try index.apply(upserts: [], touches: [], removals: [url], at: 2)
        #expect(try index.allRecords().isEmpty)
    }
}
