import Foundation
import Testing
import WorkerTestSupport

@testable import WorkerManifest
@testable import WorkerStore
@testable import WorkerSupport

/// The index's rows as a run holds them: every field reads back as the record it was made from.
@Suite(.hangLimit) struct IndexRowsTests {
    let object = String(repeating: "0123456789abcdef", count: 4)

    @Test func everyFieldReadsBackAndTheRowsAreFoundByURL() throws {
        let records = [
            IndexRecord(
                url: "https://a.example/1", hash: "sha256:" + object, object: object, size: 7, fetchedAt: 1.5,
                lastUsed: 2.5, isPrivate: true),
            IndexRecord(
                url: "https://a.example/2", hash: "md5:098f6bcd4621d373cade4e832627b4f6", object: object, size: 7,
                fetchedAt: 3, lastUsed: 4, etag: "\"e\"", lastModified: "Mon, 01 Jan 2024 00:00:00 GMT"),
            IndexRecord(
                url: "https://a.example/é", hash: nil, object: String(repeating: "f", count: 64), size: 0,
                fetchedAt: 0, lastUsed: 0, etag: ""),
        ]
        let rows = IndexRows(records)
        #expect(Array(rows) == records)
        #expect(rows.row(0).hash == "sha256:" + object)
        #expect(rows.row(1).etag == "\"e\"" && rows.row(1).lastModified == "Mon, 01 Jan 2024 00:00:00 GMT")
        #expect(rows.row(2).hash == nil && rows.row(2).etag == "" && rows.row(2).lastModified == nil)
        #expect(rows.row(0).objectName == ObjectName(hex: object))
        for (position, record) in records.enumerated() {
            #expect(rows.find(record.url) == position)
        }
        #expect(rows.find("https://a.example/3") == nil)
        #expect(rows.find("https://a.example/") == nil)
    }

    /// An object name read from its 64 digits: the first byte is the fan-out folder, the digits
    /// come back as they were, and anything but 64 lowercase hex digits is no name.
    @Test func anObjectNameIsItsDigitsBigEndian() throws {
        let hex = "ab" + String(repeating: "0123456789abcdef", count: 3) + "fedcba98765432"
        let name = try #require(ObjectName(hex: hex))
        #expect(name.hex == hex && name.fanOut == 0xab)
        #expect(name.words.0 == 0xab01_2345_6789_abcd && name.words.3 == 0xeffe_dcba_9876_5432)
        #expect(Array(hex.utf8).withUnsafeBytes { name.isSpelled(by: $0) })
        #expect(ObjectName(hex: hex.uppercased()) == nil)
        #expect(ObjectName(hex: String(hex.dropLast())) == nil)
        #expect(ObjectName(hex: hex + "0") == nil)
        #expect(ObjectName(hex: String(hex.dropLast()) + "g") == nil)
    }

    @Test func aURLIsHeldOnceAndADamagedObjectNameNotAtAll() {
        let first = IndexRecord(url: "https://a.example/1", hash: nil, object: object, size: 1, fetchedAt: 0, lastUsed: 0)
        var second = first
        second.size = 2
        let damaged = IndexRecord(url: "https://a.example/2", hash: nil, object: "../../etc/passwd", size: 1, fetchedAt: 0, lastUsed: 0)
        let rows: IndexRows = [first, second, damaged]
        #expect(Array(rows) == [first])
        #expect(rows.find(damaged.url) == nil)
    }

    @Test func manyRowsAreEachFoundAcrossTheTablesGrowth() {
        var builder = IndexRows.Builder()
        let urls = (0..<5000).map { "https://a.example/\($0)" }
        for url in urls {
            builder.append(IndexRecord(url: url, hash: nil, object: object, size: 1, fetchedAt: 0, lastUsed: 0))
        }
        let rows = builder.rows
        for (position, url) in urls.enumerated() { #expect(rows.find(url) == position) }
    }

    /// Rows read from the index are not checked for duplicates (the URL is its key): their URL
    /// table is made on the first lookup, and finds every row as the checked rows' does.
    @Test func rowsNotCheckedAsTheyComeAreFoundByATableMadeOnTheFirstLookup() {
        var builder = IndexRows.Builder(checksDuplicates: false)
        for offset in 0..<5000 {
            builder.append(
                IndexRecord(
                    url: "http://h/u/\(offset)", hash: nil, object: object, size: Int64(offset),
                    fetchedAt: 0, lastUsed: 0))
        }
        let rows = builder.rows
        #expect(rows.count == 5000)
        let misses = (0..<5000).filter { (offset: Int) in rows.find("http://h/u/\(offset)") != offset }
        #expect(misses.isEmpty, "\(misses.count) rows not found")
        #expect(rows.find("http://h/u/5000") == nil && rows.find("") == nil)
        #expect(rows.row(4321).size == 4321)
    }

    @Test func sizesReadAheadAreTheFilesSizesByRow() throws {
        let directory = TemporaryDirectory()
        let store = try ContentStore(root: directory.path + "/cache")
        directory.write("cache/objects/sha256/01/" + object, "four")
        let missing = String(repeating: "ab", count: 32)
        let rows: IndexRows = [
            IndexRecord(url: "https://a.example/1", hash: nil, object: object, size: 4, fetchedAt: 0, lastUsed: 0),
            IndexRecord(url: "https://a.example/2", hash: nil, object: missing, size: 4, fetchedAt: 0, lastUsed: 0),
        ]
        let unread = ObjectDirectory(objectsDirectory: store.objectsDirectory)
        let ahead = ObjectDirectory(objectsDirectory: store.objectsDirectory)
        ahead.preloadSizes(of: rows)
        for objects in [unread, ahead] {
            #expect(objects.size(of: rows.row(0)) == 4)
            #expect(objects.size(of: rows.row(1)) == nil)
        }
        #expect(ahead.hasSizes && !unread.hasSizes)
        // A row of other rows, at a place the sizes read ahead have too, is stat'ed for itself.
        let other: IndexRows = [IndexRecord(url: "https://a.example/3", hash: nil, object: missing, size: 4, fetchedAt: 0, lastUsed: 0)]
        #expect(ahead.size(of: other.row(0)) == nil)
    }

    /// Sizes read on two threads, half each, are each row's own: objects in many fan-out
    /// folders, missing ones and one that is a folder, on either side of the halfway row.
    @Test func sizesReadOnTwoThreadsAreEachRowsOwn() throws {
        let directory = TemporaryDirectory()
        let store = try ContentStore(root: directory.path + "/cache")
        var records: [IndexRecord] = []
        for offset in 0..<40 {
            let name = Hex.encode([UInt8(offset * 7 % 256)] + Array(repeating: UInt8(offset), count: 31))
            let folder = "cache/objects/sha256/" + name.prefix(2) + "/"
            if offset == 25 {
                try FileManager.default.createDirectory(atPath: directory.path + "/" + folder + name, withIntermediateDirectories: true)
            } else if offset % 5 != 3 {
                directory.write(folder + name, String(repeating: "x", count: offset))
            }
            records.append(IndexRecord(url: "https://a.example/\(offset)", hash: nil, object: name, size: 0, fetchedAt: 0, lastUsed: 0))
        }
        let rows = IndexRows(records)
        let unread = ObjectDirectory(objectsDirectory: store.objectsDirectory)
        let ahead = ObjectDirectory(objectsDirectory: store.objectsDirectory)
        ahead.preloadSizes(of: rows, twoThreadsFrom: 10)
        let expected = (0..<40).map { (offset: Int) -> Int64? in offset == 25 || offset % 5 == 3 ? nil : Int64(offset) }
        #expect((0..<40).map { (position: Int) in ahead.size(of: rows.row(position)) } == expected)
        #expect((0..<40).map { (position: Int) in unread.size(of: rows.row(position)) } == expected)
    }
}
