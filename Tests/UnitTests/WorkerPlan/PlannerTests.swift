import Foundation
import Testing
import WorkerTestSupport

@testable import WorkerManifest
@testable import WorkerPlan
@testable import WorkerStore

@Suite(.hangLimit) struct PlannerTests {
    let objectA = String(repeating: "a", count: 64)
    let objectB = String(repeating: "b", count: 64)

    func entry(_ url: String, _ hash: String?, manifest: Int = 0) -> ManifestEntry {
        ManifestEntry(url: url, hash: hash.map { try! ContentHash.parse($0).get() }, manifest: manifest, line: 1, column: 1)
    }

    func record(_ url: String, hash: String?, object: String) -> IndexRecord {
        IndexRecord(url: url, hash: hash, object: object, size: 10, fetchedAt: 0, lastUsed: 0)
    }

    func plan(_ entries: [ManifestEntry], _ records: [IndexRecord], present: Set<String>) -> SyncPlan {
        let manifest = Manifest(path: "m.yaml", name: "m", baseURL: nil, headers: [], localRoot: "/", entryCount: entries.count)
        return Planner(objectExists: { present.contains($0) })
            .plan(ManifestSet(manifests: [manifest], entries: entries), records: IndexRows(records))
    }

    /// Entries that expect the same content are one group (one download, the others reuse it),
    /// whatever form their hashes were written in; hashless entries and every entry under
    /// `--refresh` are groups of one.
    @Test func downloadGroupsJoinTheSameExpectedContent() {
        let md5 = "0cc175b9c0f1b6a831c399e269772661"
        let result = plan(
            [
                entry("http://h/a", "sha256:" + objectA), entry("http://h/b", objectA.uppercased()),
                entry("http://h/c", nil), entry("http://h/d", "sha256:" + objectB), entry("http://h/e", nil),
                entry("http://h/f", "md5:" + md5), entry("http://h/g", md5),
            ],
            [], present: [])
        #expect(result.downloadGroups(refresh: false).map { Array($0.items) } == [[0, 1], [2], [3], [4], [5, 6]])
        #expect(result.downloadGroups(refresh: false)[0].items.map { result.request(for: $0).url } == ["http://h/a", "http://h/b"])
        #expect(result.downloadGroups(refresh: true).map { Array($0.items) } == [[0], [1], [2], [3], [4], [5], [6]])
    }

    /// Groups are found by 8 bytes of their content's digest: hashes that share those bytes (of
    /// one algorithm or two) but not the rest are groups of their own, each joined by its equals.
    @Test func hashesThatShareTheirFirstBytesAreGroupsOfTheirOwn() {
        let prefix = String(repeating: "ab", count: 8)
        let one = prefix + String(repeating: "1", count: 48), two = prefix + String(repeating: "2", count: 48)
        let md5 = prefix + String(repeating: "3", count: 16)
        let result = plan(
            [
                entry("http://h/a", "sha256:" + one), entry("http://h/b", "sha256:" + two),
                entry("http://h/c", "md5:" + md5), entry("http://h/d", "sha256:" + two),
                entry("http://h/e", "sha256:" + one), entry("http://h/f", "md5:" + md5),
            ],
            [], present: [])
        #expect(result.downloadGroups(refresh: false).map { Array($0.items) } == [[0, 4], [1, 3], [2, 5]])
        #expect(result.downloadGroups(refresh: true).map { Array($0.items) } == [[0], [1], [2], [3], [4], [5]])
    }

    /// A plan keeps each action in a byte, a reuse's object and size aside: every kind reads back.
    @Test func everyActionReadsBackAsItWasPlanned() {
        let given: [PlannedEntry.Action] = [
            .keep, .download, .reuse(object: objectA, size: 7), .revalidate, .refresh,
            .repair, .reuse(object: objectB, size: 0), .keep,
        ]
        var actions = PlanActions()
        for action in given { actions.append(action) }
        #expect(actions.count == given.count)
        #expect(given.indices.map { actions[$0] } == given)
    }

    /// A manifest in the rows' (URL) order meets each row where the last one left off; one in
    /// another order looks each up: the plans are the same, orphans included.
    @Test func aManifestInTheRowsOrderAndOneInAnotherPlanAlike() {
        let urls = (0..<300).map { String(format: "http://h/%03d", $0) }
        var builder = IndexRows.Builder(checksDuplicates: false)
        for (offset, url) in urls.enumerated() where offset % 7 != 3 {
            builder.append(
                record(url, hash: "sha256:" + (offset % 2 == 0 ? objectA : objectB), object: offset % 2 == 0 ? objectA : objectB))
        }
        builder.append(record("http://h/zz-orphan", hash: nil, object: objectA))
        let rows = builder.rows
        let manifest = Manifest(path: "m.yaml", name: "m", baseURL: nil, headers: [], localRoot: "/", entryCount: urls.count)
        func plan(_ order: [String]) -> [String: String] {
            // Each URL's hash by its own number, whatever its place.
            let entries = order.map { (url: String) in entry(url, "sha256:" + (Int(url.suffix(3))! % 3 == 0 ? objectB : objectA)) }
            let planned = Planner(objectExists: { _ in true }).plan(ManifestSet(manifests: [manifest], entries: entries), records: rows)
            var outcome = Dictionary(
                uniqueKeysWithValues: planned.items.map {
                    ($0.entry.url, "\($0.action) \($0.previous?.url ?? "-")")
                })
            outcome["orphans"] = planned.orphans.map(\.url).joined(separator: " ")
            return outcome
        }
        var shuffled = urls
        var generator = SplitMix64(seed: 7)
        shuffled.shuffle(using: &generator)
        let inOrder = plan(urls)
        let otherOrder = plan(shuffled)
        #expect(urls.filter { (url: String) in inOrder[url] != otherOrder[url] }.isEmpty)
        #expect(inOrder["orphans"] == "http://h/zz-orphan" && otherOrder["orphans"] == "http://h/zz-orphan")
        #expect(inOrder["http://h/003"] == "reuse(object: \"\(objectB)\", size: 10) -", "no row, content stored under another URL")
        #expect(inOrder["http://h/000"] == "reuse(object: \"\(objectB)\", size: 10) http://h/000", "its row at another version")
        #expect(inOrder["http://h/002"] == "keep http://h/002")
    }

    @Test func unchangedWhenTheIndexHasTheURLAtThisHashAndTheObjectExists() {
        let result = plan(
            [entry("http://h/a", "sha256:" + objectA)],
            [record("http://h/a", hash: "sha256:" + objectA, object: objectA)], present: [objectA])
        #expect(result.items.map(\.plannedStatus) == [.unchanged])
    }

    /// With sizes checked, an object whose file is not its row's size is fetched again
    /// (`.repair`, reported as updated); one of the right size is kept; a reuse needs the right
    /// size too.
    @Test func aRowWhoseObjectChangedSizeIsRepaired() {
        let manifest = Manifest(path: "m.yaml", name: "m", baseURL: nil, headers: [], localRoot: "/", entryCount: 3)
        var planner = Planner(objectExists: { _ in true })
        planner.objectSize = { $0 == objectA ? 10 : 17 }
        let result = planner.plan(
            ManifestSet(
                manifests: [manifest],
                entries: [
                    entry("http://h/a", "sha256:" + objectA), entry("http://h/b", "sha256:" + objectB),
                    entry("http://h/c", "sha256:" + objectB),
                ]),
            records: [
                record("http://h/a", hash: "sha256:" + objectA, object: objectA),
                record("http://h/b", hash: "sha256:" + objectB, object: objectB),
            ])
        #expect(result.items.map(\.action) == [.keep, .repair, .download])
        #expect(result.items[1].plannedStatus == .updated)
        #expect(
            result.downloadGroups(refresh: false).map { Array($0.items) } == [[1, 2]], "one download for the content, the other links it")
    }

    @Test func addedWhenMissingOrWhenTheObjectFileIsGone() {
        let result = plan(
            [entry("http://h/new", "sha256:" + objectA), entry("http://h/gone", "sha256:" + objectB)],
            [record("http://h/gone", hash: "sha256:" + objectB, object: objectB)], present: [])
        #expect(result.items.map(\.plannedStatus) == [.added, .added])
        #expect(result.items.map(\.action) == [.download, .download])
    }

    @Test func updatedWhenTheHashChanged() {
        let result = plan(
            [entry("http://h/a", "sha256:" + objectB)],
            [record("http://h/a", hash: "sha256:" + objectA, object: objectA)], present: [objectA])
        #expect(result.items.map(\.plannedStatus) == [.updated])
        #expect(result.items[0].previous?.hash == "sha256:" + objectA)
    }

    @Test func reusedWhenTheContentIsStoredUnderAnotherURL() {
        let md5 = "098f6bcd4621d373cade4e832627b4f6"
        let result = plan(
            [entry("http://h/copy", "sha256:" + objectA), entry("http://h/md5copy", "md5:" + md5)],
            [
                record("http://h/a", hash: "sha256:" + objectA, object: objectA),
                record("http://h/b", hash: "md5:" + md5, object: objectB),
            ],
            present: [objectA, objectB])
        #expect(result.items.map(\.action) == [.reuse(object: objectA, size: 10), .reuse(object: objectB, size: 10)])
        #expect(result.items.map(\.plannedStatus) == [.reused, .reused])
    }

    @Test func notReusedWhenThatObjectFileIsMissing() {
        let result = plan(
            [entry("http://h/copy", "sha256:" + objectA)],
            [record("http://h/a", hash: "sha256:" + objectA, object: objectA)], present: [])
        #expect(result.items.map(\.action) == [.download])
    }

    @Test func hashlessEntryIsKeptWhilePresent() {
        let result = plan(
            [entry("http://h/a", nil), entry("http://h/b", nil)],
            [record("http://h/a", hash: nil, object: objectA)], present: [objectA])
        #expect(result.items.map(\.plannedStatus) == [.unchanged, .added])
    }

    @Test func sha256ManifestHashMatchingTheStoredObjectIsUnchanged() {
        // The row was verified against md5; the manifest now names the same bytes by SHA-256.
        let result = plan(
            [entry("http://h/a", "sha256:" + objectA)],
            [record("http://h/a", hash: "md5:098f6bcd4621d373cade4e832627b4f6", object: objectA)],
            present: [objectA])
        #expect(result.items.map(\.plannedStatus) == [.unchanged])
    }

    @Test func orphansAreRowsNoManifestNames() {
        let result = plan(
            [entry("http://h/a", nil)],
            [record("http://h/a", hash: nil, object: objectA), record("http://h/old", hash: nil, object: objectB)],
            present: [objectA, objectB])
        #expect(result.orphans.map(\.url) == ["http://h/old"])
        #expect(result.indexedEntries == 2)
    }
}

@Suite(.hangLimit) struct URLPositionsTests {
    @Test func findsWhatWasInsertedAndNothingElse() {
        let urls = (0..<1000).map { "http://h/u/\($0)" }
        var positions = URLPositions()
        positions.reserve(urls.count)
        for (offset, url) in urls.enumerated() { _ = positions.insertIfAbsent(url, at: offset) { urls[$0] } }
        var wrong: [Int] = []
        for number in 0..<1000 {
            let found = positions.find("http://h/u/\(number)") { urls[$0] }
            if found != number { wrong.append(number) }
        }
        #expect(wrong.isEmpty)
        #expect(positions.find("http://h/u/1000") { urls[$0] } == nil)
    }

    @Test func digestCollisionsFallBackToTheURL() {
        // Every URL gets the same digest: all but the first live in the collision map.
        let urls = ["http://h/a", "http://h/b", "http://h/c"]
        var positions = URLPositions(digest: { _ in 42 })
        for (offset, url) in urls.enumerated() { _ = positions.insertIfAbsent(url, at: offset) { urls[$0] } }
        #expect(positions.find("http://h/a") { urls[$0] } == 0)
        #expect(positions.find("http://h/b") { urls[$0] } == 1)
        #expect(positions.find("http://h/c") { urls[$0] } == 2)
        #expect(positions.find("http://h/d") { urls[$0] } == nil)
    }

    @Test func insertIfAbsentAnswersTheFirstPositionAndKeepsEverythingAcrossGrowth() {
        // No reserve: the table grows many times on the way to 5,000 URLs.
        let urls = (0..<5000).map { "http://h/u/\($0)" }
        var positions = URLPositions()
        var firstTime: [Int?] = []
        for (offset, url) in urls.enumerated() {
            firstTime.append(positions.insertIfAbsent(url, at: offset) { urls[$0] })
        }
        #expect(firstTime.allSatisfy { $0 == nil })
        let again = urls.enumerated().map { offset, url in positions.insertIfAbsent(url, at: 9999) { urls[$0] } }
        #expect(again == Array(0..<5000))
        #expect(positions.find("http://h/u/5000") { urls[$0] } == nil)
    }

    @Test func insertIfAbsentWithCollidingDigests() {
        let urls = ["http://h/a", "http://h/b", "http://h/c"]
        var positions = URLPositions(digest: { _ in 7 })
        #expect(positions.insertIfAbsent(urls[0], at: 0) { urls[$0] } == nil)
        #expect(positions.insertIfAbsent(urls[1], at: 1) { urls[$0] } == nil)
        #expect(positions.insertIfAbsent(urls[1], at: 2) { urls[$0] } == 1)
        #expect(positions.insertIfAbsent(urls[0], at: 2) { urls[$0] } == 0)
        #expect(positions.find(urls[2]) { urls[$0] } == nil)
    }

    /// A slot keeps 32 bits of the digest: digests that differ only where the fold cancels out
    /// (the same value in both halves) are told apart by the URLs themselves.
    @Test func digestsThatShareTheirKeptBitsAreToldApartByTheURL() {
        let urls = ["http://h/a", "http://h/b", "http://h/c"]
        let digests: [String: UInt64] = [
            "http://h/a": 0x0000_0001_0000_0001, "http://h/b": 0x0000_0002_0000_0002,
            "http://h/c": 0x1234_5678_1234_5678,
        ]
        var positions = URLPositions(digest: { digests[String(decoding: $0, as: UTF8.self)] ?? 0 })
        for (offset, url) in urls.enumerated() {
            #expect(positions.insertIfAbsent(url, at: offset) { urls[$0] } == nil)
        }
        for (offset, url) in urls.enumerated() {
            #expect(positions.find(url) { urls[$0] } == offset)
            #expect(positions.insertIfAbsent(url, at: 9) { urls[$0] } == offset)
        }
        #expect(positions.find("http://h/d") { urls[$0] } == nil)
    }

    /// Every byte and the length reach the digest: a change of one byte anywhere in the first 40
    /// (whole words and the tail alike), or one byte more or less, gives another digest — in the 32
    /// bits a slot keeps as well as in all 64.
    @Test func everyByteAndTheLengthReachTheDigest() {
        func digest(_ bytes: [UInt8]) -> UInt64 { bytes.withUnsafeBytes(URLPositions.digest64) }
        func kept(_ digest: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: digest ^ digest >> 32) }
        let base = Array("http://127.0.0.1:18490/scale/0000/0001.png".utf8)
        var seen: [UInt64: [UInt8]] = [digest(base): base]
        var keptBits: Set<UInt32> = [kept(digest(base))]
        var variants: [[UInt8]] = []
        for offset in 0..<40 {
            var changed = base
            changed[offset] ^= 0x01
            variants.append(changed)
        }
        for length in 0..<base.count { variants.append(Array(base.prefix(length))) }
        variants.append(base + [0])
        for variant in variants {
            let value = digest(variant)
            #expect(seen[value] == nil, "\(variant) shares a digest with \(seen[value] ?? [])")
            #expect(keptBits.insert(kept(value)).inserted)
            seen[value] = variant
        }
        #expect(digest(base) == digest(Array(base)), "a digest depends on the bytes only")
    }

    /// URLs given as bytes (the index's rows, read in place) are found the same way, colliding
    /// digests included.
    @Test func urlsGivenAsBytesCollideAndAreFoundAsStringsAre() {
        let urls = ["http://h/a", "http://h/b", "http://h/c"]
        var positions = URLPositions(digest: { _ in 7 })
        func bytes<T>(_ url: String, _ body: (UnsafeRawBufferPointer) -> T) -> T {
            var url = url
            return url.withUTF8 { body(UnsafeRawBufferPointer($0)) }
        }
        func isURL(_ url: String) -> (Int) -> Bool { { urls[$0] == url } }
        for (offset, url) in urls.prefix(2).enumerated() {
            #expect(bytes(url) { positions.insertIfAbsent($0, at: offset, isURL: isURL(url)) } == nil)
        }
        #expect(bytes(urls[1]) { positions.insertIfAbsent($0, at: 5, isURL: isURL(urls[1])) } == 1)
        #expect(bytes(urls[0]) { positions.find($0, isURL: isURL(urls[0])) } == 0)
        #expect(bytes(urls[1]) { positions.find($0, isURL: isURL(urls[1])) } == 1)
        #expect(positions.find(urls[1]) { urls[$0] } == 1)
        #expect(bytes(urls[2]) { positions.find($0, isURL: isURL(urls[2])) } == nil)
    }
}
