import Foundation
import Testing
import WorkerSupport
import WorkerTestSupport

@testable import WorkerFetch
@testable import WorkerKinds
@testable import WorkerManifest
@testable import WorkerStore

/// The parts of `worker manifest s3://` that need no server: a listing page read, the listing
/// state kept in the index, keys mapped between s3:// and http(s) mirrors.
@Suite(.hangLimit) struct BucketPartsTests {
    init() { Kinds.install() }

    @Test func aListingPageIsReadWithItsEntitiesAndItsNextToken() throws {
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>assets</Name><Prefix>a/</Prefix>
            <IsTruncated>true</IsTruncated><NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=&amp;x</NextContinuationToken>
            <Contents><Key>a/Tom &amp; Jerry &lt;1&gt; &#233;&#x41;.png</Key><LastModified>2026-11-28T17:46:48.000Z</LastModified>
            <ETag>&quot;b1946ac92492d2347c6235b4d2611184&quot;</ETag><ChecksumAlgorithm>SHA256</ChecksumAlgorithm><Size>6</Size></Contents>
            <Contents><Key>a/b.png</Key><LastModified>2026-11-28T17:46:49.000Z</LastModified><ETag>"e1"</ETag>
            <ChecksumAlgorithm>CRC32</ChecksumAlgorithm><Size>0</Size><StorageClass>STANDARD</StorageClass></Contents>
            </ListBucketResult>
            """
        let page = try #require(S3ListingPage.parse(xml))
        #expect(page.nextToken == "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=&x")
        #expect(page.objects.map(\.key) == ["a/Tom & Jerry <1> \u{E9}A.png", "a/b.png"])
        #expect(page.objects[0].etag == "\"b1946ac92492d2347c6235b4d2611184\"" && page.objects[0].size == 6)
        #expect(page.objects[0].hasSHA256 && !page.objects[1].hasSHA256 && page.objects[1].size == 0)
        #expect(page.objects[1].lastModified == "2026-11-28T17:46:49.000Z")
        let last = try #require(S3ListingPage.parse("<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>"))
        #expect(last.objects.isEmpty && last.nextToken == nil)
    }

    @Test func whatIsNotAListingIsRefused() {
        #expect(S3ListingPage.parse("<Error><Code>AccessDenied</Code></Error>") == nil)
        #expect(S3ListingPage.parse("<html>login</html>") == nil)
        // A truncated listing without its token, an object without a size: not read as complete.
        #expect(S3ListingPage.parse("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>") == nil)
        #expect(S3ListingPage.parse("<ListBucketResult><Contents><Key>a</Key></Contents></ListBucketResult>") == nil)
        #expect(S3ListingPage.parse("<ListBucketResult><Contents><Key>a</Key><Size>-1</Size></Contents></ListBucketResult>") == nil)
    }

    @Test func theListingStateIsKeptPerPrefixAndReplacedWhole() throws {
        let directory = TemporaryDirectory()
        let index = try CacheIndex(path: directory.path + "/index.sqlite", create: true)
        let a = ListedObject(url: "s3://b/p/a", etag: "\"1\"", size: 1, lastModified: "d1", sha256: String(repeating: "a", count: 64))
        let c = ListedObject(url: "s3://b/p/c", etag: "\"3\"", size: 3, lastModified: "d3", sha256: String(repeating: "c", count: 64))
        let other = ListedObject(url: "s3://b/q/x", etag: "\"9\"", size: 9, lastModified: "d9", sha256: String(repeating: "f", count: 64))
        try index.recordListing(under: "s3://b/q/", [other])
        try index.recordListing(under: "s3://b/p/", [a, c])
        #expect(try index.listedObjects(under: "s3://b/p/") == ["s3://b/p/a": a, "s3://b/p/c": c])
        try index.recordListing(under: "s3://b/p/", [a])
        #expect(try index.listedObjects(under: "s3://b/p/") == ["s3://b/p/a": a], "an object no longer listed goes")
        #expect(try index.listedObjects(under: "s3://b/q/") == ["s3://b/q/x": other], "another prefix is left alone")
        let moved = ListedObject(url: a.url, etag: "\"2\"", size: 1, lastModified: "d1", sha256: "")
        #expect(
            !a.isSameListing(as: moved)
                && a.isSameListing(as: ListedObject(url: a.url, etag: a.etag, size: 1, lastModified: "d1", sha256: "")))
    }

    @Test func anS3PrefixMirroredOverHTTPGetsItsKeysPercentEncodedAndBack() {
        let mirrors = ManifestMirrors([
            .init(prefix: "s3://assets/a/", mirrors: ["https://cdn.test/a/", "s3://backup/a/"]),
            .init(prefix: "https://origin.test/a/", mirrors: ["s3://assets/a/", "https://cdn.test/a/"]),
        ])
        #expect(
            mirrors.mirrors(for: "s3://assets/a/two words+plus%.png")
                == ["https://cdn.test/a/two%20words%2Bplus%25.png", "s3://backup/a/two words+plus%.png"])
        #expect(
            mirrors.mirrors(for: "https://origin.test/a/two%20words+plus.png")
                == ["s3://assets/a/two words+plus.png", "https://cdn.test/a/two%20words+plus.png"])
    }
}
