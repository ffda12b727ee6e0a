import Crypto
import Foundation
import Testing
import WorkerTestSupport

@testable import WorkerManifest
@testable import WorkerStore
@testable import WorkerSupport

@Suite(.hangLimit) struct StoreTests {
    @Test func indexRoundTripsRecordsAndRemovals() throws {
        let directory = TemporaryDirectory()
        let index = try CacheIndex(path: directory.path + "/index.sqlite", create: true)
        let a = IndexRecord(
            url: "http://h/a", hash: "md5:098f6bcd4621d373cade4e832627b4f6",
            object: String(repeating: "a", count: 64), size: 4, fetchedAt: 1, lastUsed: 2, etag: "\"e\"")
        let b = IndexRecord(
            url: "http://h/b", hash: nil, object: String(repeating: "a", count: 64), size: 4,
            fetchedAt: 1, lastUsed: 2, lastModified: "Mon, 01 Jan 2024 00:00:00 GMT")
        try index.apply(upserts: [a, b], touches: [], removals: [], at: 0)
        #expect(try index.allRecords().sorted { $0.url < $1.url } == [a, b])
        #expect(try index.references(object: a.object) == 2)

        try index.apply(upserts: [], touches: ["http://h/a"], removals: ["http://h/b"], at: 99)
        let reopened = try CacheIndex(path: directory.path + "/index.sqlite", create: false)
        let rows = try reopened.allRecords()
        #expect(rows.map(\.url) == ["http://h/a"])
        #expect(rows.first?.lastUsed == 99)
        #expect(try reopened.references(object: a.object) == 1)
    }

    @Test func aURLStoredOrRemovedClearsItsPendingFailure() throws {
        let directory = TemporaryDirectory()
        let index = try CacheIndex(path: directory.path + "/index.sqlite", create: true)
        let failed = ["http://h/a", "http://h/b", "http://h/c"].map {
            FailureRecord(url: $0, reason: "http_status", error: "HTTP 503", attempts: 3, at: 1)
        }
        try index.apply(upserts: [], touches: [], removals: [], failures: failed, at: 1)
        #expect(try index.failures().map(\.url) == ["http://h/a", "http://h/b", "http://h/c"])
        let stored = IndexRecord(
            url: "http://h/a", hash: nil, object: String(repeating: "a", count: 64), size: 4,
            fetchedAt: 2, lastUsed: 2)
        try index.apply(upserts: [stored], touches: [], removals: ["http://h/c"], at: 2)
        #expect(try index.failures().map(\.url) == ["http://h/b"])
        // With none pending, storing rows looks nothing up and records nothing.
        try index.apply(upserts: [], touches: [], removals: ["http://h/b"], at: 3)
        try index.apply(upserts: [stored], touches: [], removals: [], at: 4)
        #expect(try index.failures().isEmpty)
        #expect(try index.statistics().pendingFailures == 0)
    }

    @Test func corruptIndexIsUnusable() throws {
        let directory = TemporaryDirectory()
        let path = directory.write("index.sqlite", String(repeating: "not a database ", count: 400))
        #expect(throws: CacheError.self) { try CacheIndex(path: path, create: true).allRecords() }
    }

    @Test func secondLockWaitsThenGivesUp() async throws {
        let directory = TemporaryDirectory()
        let first = try await CacheLock(directory: directory.path, wait: 0, context: RunContext())
        let started = Date()
        await #expect(throws: CacheError.self) { _ = try await CacheLock(directory: directory.path, wait: 0.3, context: RunContext()) }
        #expect(Date().timeIntervalSince(started) >= 0.3)
        withExtendedLifetime(first) {}
    }

    /// Held, the lock refuses a second holder; released (by `release()` or by going away), it is
    /// free again, and the next holder holds it as the first did.
    @Test func lockIsFreeAgainWhenReleased() async throws {
        let directory = TemporaryDirectory()
        var first: CacheLock? = try await CacheLock(directory: directory.path, wait: 0, context: RunContext())
        await #expect(throws: CacheError.self) { _ = try await CacheLock(directory: directory.path, wait: 0, context: RunContext()) }
        withExtendedLifetime(first) {}
        first = nil
        let second = try await CacheLock(directory: directory.path, wait: 0, context: RunContext())
        await #expect(throws: CacheError.self) { _ = try await CacheLock(directory: directory.path, wait: 0, context: RunContext()) }
        second.release()
        let third = try await CacheLock(directory: directory.path, wait: 0, context: RunContext())
        withExtendedLifetime(third) {}
    }

    @Test func storeLaysOutObjectsByHash() throws {
        let directory = TemporaryDirectory()
        let store = try ContentStore(root: directory.path + "/cache")
        let name = String(repeating: "c", count: 64)
        #expect(store.objectPath(name) == directory.path + "/cache/objects/sha256/cc/" + name)
        #expect(CacheLayout.objectPath(inObjectsDirectory: "/o", "ab") == "/o/ab/ab")
        #expect(CacheLayout.objectPath(inObjectsDirectory: "", name) == "/cc/" + name)
        #expect(!store.contains(name))
        let file = try store.makeTemporaryFile()
        #expect(file.path.hasPrefix(store.tmpDirectory + "/"))
        #expect(write(file.fd, "hello", 5) == 5, "the descriptor writes although the file is read-only")
        close(file.fd)
        try store.install(temporary: file.path, sha256: name)
        #expect(store.contains(name))
        #expect(access(file.path, F_OK) != 0)
        var info = stat()
        #expect(stat(store.objectPath(name), &info) == 0)
        #expect(info.st_mode & 0o777 == 0o444, "objects are read-only")
    }

    /// One flush per batch, under the lock: nothing is installed before the commit (another
    /// run holding the lock must never see an object no row names yet); then new names are
    /// taken (the cache marked unclean first) and a name that is taken already (here a damaged
    /// leftover) is replaced by the verified bytes after the flush. A row for content stored
    /// earlier is written only if its object is still there.
    @Test func aBatchInstallsNewObjectsAndReplacesATakenName() throws {
        let directory = TemporaryDirectory()
        let store = try ContentStore(root: directory.path + "/cache")
        store.completeLayout()
        let index = try CacheIndex(path: CacheLayout.indexPath(store.root), create: true)
        func body(_ text: String) throws -> String {
            let file = try store.makeTemporaryFile()
            #expect(write(file.fd, text, text.utf8.count) == text.utf8.count)
            close(file.fd)
            return file.path
        }
        let fresh = String(repeating: "1", count: 64), taken = String(repeating: "2", count: 64)
        let gone = String(repeating: "5", count: 64)
        #expect(FileManager.default.createFile(atPath: store.objectPath(taken), contents: Data("damaged".utf8)))
        var batch = BatchCommit(store: store)
        for (name, text) in [(fresh, "fresh"), (taken, "verified")] {
            batch.add(
                IndexRecord(
                    url: "http://h/\(text)", hash: nil, object: name, size: Int64(text.utf8.count),
                    fetchedAt: 1, lastUsed: 1), installing: try body(text))
        }
        batch.add(IndexRecord(url: "http://h/reused", hash: nil, object: gone, size: 4, fetchedAt: 1, lastUsed: 1), installing: nil)
        // Rows that reuse content stay when this batch installs their object, or the store has it.
        batch.add(IndexRecord(url: "http://h/as-fresh", hash: nil, object: fresh, size: 5, fetchedAt: 1, lastUsed: 1), installing: nil)
        batch.add(IndexRecord(url: "http://h/as-taken", hash: nil, object: taken, size: 8, fetchedAt: 1, lastUsed: 1), installing: nil)
        #expect(!batch.markedUnclean && store.uncleanMarks().isEmpty)
        #expect(!store.contains(fresh))
        #expect(FileManager.default.contents(atPath: store.objectPath(taken)) == Data("damaged".utf8))
        try batch.commit(index: index, at: 1)
        #expect(batch.markedUnclean && store.uncleanMarks() == [PathName.lastComponent(CacheLayout.uncleanMarkPath(store.root))])
        #expect(FileManager.default.contents(atPath: store.objectPath(fresh)) == Data("fresh".utf8))
        #expect(FileManager.default.contents(atPath: store.objectPath(taken)) == Data("verified".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.tmpDirectory).isEmpty)
        #expect(try index.allRecords().map(\.object).sorted() == [fresh, fresh, taken, taken])
        #expect(batch.vanished == ["http://h/reused"])
        store.markClean()
        #expect(store.uncleanMarks().isEmpty)
    }

    /// An index file a first run was killed before making the tables of (an empty file) reads as
    /// an empty index for readers, who cannot make them; a writer makes them.
    @Test func anIndexWithoutTablesReadsAsEmpty() throws {
        let directory = TemporaryDirectory()
        let path = directory.write("cache/index.sqlite", "")
        let reader = try CacheIndex(path: path, create: false, readOnly: true)
        #expect(reader.isStandIn)
        #expect(try reader.allRecords().isEmpty && reader.failures().isEmpty)
        let writer = try CacheIndex(path: path, create: true)
        #expect(!writer.isStandIn)
        #expect(try !CacheIndex(path: path, create: false, readOnly: true).isStandIn)
    }

    /// A file of `tmp/` is installed by names relative to the store's open folders, any other by
    /// its full path; both refuse a taken name, and a failed rename keeps its own errno.
    @Test func installsFromTmpAndFromElsewhere() throws {
        let directory = TemporaryDirectory()
        let store = try ContentStore(root: directory.path + "/cache")
        let inTmp = try store.makeTemporaryFile()
        close(inTmp.fd)
        let elsewhere = directory.write("body", "elsewhere")
        let first = String(repeating: "3", count: 64), second = String(repeating: "4", count: 64)
        #expect(try store.installNew(temporary: inTmp.path, sha256: first))
        #expect(try store.installNew(temporary: elsewhere, sha256: second))
        #expect(store.contains(first) && store.contains(second))
        #expect(FileManager.default.contents(atPath: store.objectPath(second)) == Data("elsewhere".utf8))
        let again = try store.makeTemporaryFile()
        close(again.fd)
        #expect(try !store.installNew(temporary: again.path, sha256: first), "the name is taken")
        let error = #expect(throws: CacheError.self) {
            try store.install(temporary: store.tmpDirectory + "/missing", sha256: first)
        }
        guard case .system(let cause)? = error else {
            Issue.record("expected a system error, got \(String(describing: error))")
            return
        }
        #expect(cause == SystemError("rename into", store.objectPath(first), code: ENOENT))
    }

    /// The schema is made in one transaction, and an index of schema 1 (before `origins`) gets
    /// the missing table and the new version.
    @Test func theSchemaIsMadeOnceAndUpgraded() throws {
        let directory = TemporaryDirectory()
        let path = directory.path + "/index.sqlite"
        do {
            let old = try SQLiteDatabase(path: path, create: true, readOnly: false)
            try old.execute(
                "CREATE TABLE entries(url TEXT PRIMARY KEY NOT NULL, hash TEXT, object TEXT NOT NULL, size INTEGER NOT NULL, fetched_at REAL NOT NULL, last_used REAL NOT NULL, etag TEXT, last_modified TEXT) WITHOUT ROWID; PRAGMA user_version = 1;"
            )
        }
        let index = try CacheIndex(path: path, create: true)
        #expect(try index.unhealthyOrigins().isEmpty)
        try index.recordOrigins(down: [("http://h", "refused")], reached: [], at: 1)
        #expect(try index.unhealthyOrigins().map(\.origin) == ["http://h"])
        let version = try index.database.prepare("PRAGMA user_version")
        _ = try version.step()
        #expect(version.int(0) == Int64(CacheIndex.schemaVersion))
        let fresh = try CacheIndex(path: directory.path + "/fresh.sqlite", create: true)
        let tables = try fresh.database.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table'")
        _ = try tables.step()
        #expect(
            tables.int(0) == 8,
            "entries, failures, origins, listed_objects, accepted_manifests, manifest_serials, manifest_documents, manifest_runs")
        // Schema 2's hash index of every row becomes one of the other algorithms' rows.
        let second = directory.path + "/second.sqlite"
        do {
            let old = try SQLiteDatabase(path: second, create: true, readOnly: false)
            try old.execute(
                "CREATE TABLE entries(url TEXT PRIMARY KEY NOT NULL, hash TEXT, object TEXT NOT NULL, size INTEGER NOT NULL, fetched_at REAL NOT NULL, last_used REAL NOT NULL, etag TEXT, last_modified TEXT) WITHOUT ROWID; CREATE INDEX entries_hash ON entries(hash); PRAGMA user_version = 2;"
            )
        }
        for index in [try CacheIndex(path: second, create: true), fresh] {
            let definition = try index.database.prepare("SELECT sql FROM sqlite_master WHERE name = 'entries_hash'")
            _ = try definition.step()
            #expect(definition.text(0)?.contains("WHERE substr(hash, 1, 7) <> 'sha256:'") == true)
        }
        // Schema 4 (before `private`): a reader reads its rows as not private; a writer adds the
        // column, and the rows keep what they had.
        let fourth = directory.path + "/fourth.sqlite"
        do {
            let old = try SQLiteDatabase(path: fourth, create: true, readOnly: false)
            try old.execute(
                "CREATE TABLE entries(url TEXT PRIMARY KEY NOT NULL, hash TEXT, object TEXT NOT NULL, size INTEGER NOT NULL, fetched_at REAL NOT NULL, last_used REAL NOT NULL, etag TEXT, last_modified TEXT) WITHOUT ROWID; INSERT INTO entries VALUES ('http://h/a', NULL, '\(String(repeating: "ab", count: 32))', 1, 0, 0, NULL, NULL); PRAGMA user_version = 4;"
            )
        }
        let reader = try CacheIndex(path: fourth, create: false, readOnly: true)
        #expect(try reader.allRecords().map(\.isPrivate) == [false])
        let writer = try CacheIndex(path: fourth, create: true)
        var record = try #require(try writer.allRecords().first)
        record.isPrivate = true
        try writer.apply(upserts: [record], touches: [], removals: [], at: 1)
        #expect(try writer.allRecords().map(\.isPrivate) == [true])
        // A newer schema is refused, named.
        do {
            let newer = try SQLiteDatabase(path: directory.path + "/newer.sqlite", create: true, readOnly: false)
            try newer.execute("PRAGMA user_version = \(CacheIndex.schemaVersion + 1);")
        }
        #expect(throws: CacheError.self) { try CacheIndex(path: directory.path + "/newer.sqlite", create: true) }
    }

    /// A run on a new cache skips listing its (empty) object folders.
    @Test func aStoreKnowsWhetherItMadeTheObjectFolders() throws {
        let directory = TemporaryDirectory()
        #expect(try ContentStore(root: directory.path + "/cache").isNew)
        #expect(try !ContentStore(root: directory.path + "/cache").isNew)
    }

    /// A new cache's fan-out folders are made as its objects arrive, the rest by
    /// `completeLayout`; each later run checks all 256 by one listing, and one missing (or of
    /// another kind) sends it back to making them one by one, refusing a planted link.
    @Test func aMissingFanOutFolderIsMadeAgain() throws {
        let directory = TemporaryDirectory()
        let store = try ContentStore(root: directory.path + "/cache")
        let objects = store.objectsDirectory
        #expect(try FileManager.default.contentsOfDirectory(atPath: objects).isEmpty, "none made up front")
        func temporary(_ text: String) throws -> String {
            let (fd, path) = try store.makeTemporaryFile()
            #expect(write(fd, text, text.utf8.count) == text.utf8.count)
            close(fd)
            return path
        }
        // "fan-out" hashes to 1e…, "other" to d9….
        let fanOut = Hex.encode(SHA256.hash(data: Array("fan-out".utf8)))
        #expect(try store.installNew(temporary: temporary("fan-out"), sha256: fanOut))
        #expect(store.contains(fanOut))
        #expect(try FileManager.default.contentsOfDirectory(atPath: objects) == ["1e"])
        // A dangling link in a folder's place is not followed: the install fails, and the
        // next run refuses the cache until it is gone.
        let other = Hex.encode(SHA256.hash(data: Array("other".utf8)))
        #expect(symlink(directory.path + "/nowhere", objects + "/d9") == 0)
        #expect(throws: CacheError.self) { try store.installNew(temporary: temporary("other"), sha256: other) }
        #expect(access(directory.path + "/nowhere", F_OK) != 0)
        store.completeLayout()
        #expect(!ContentStore.hasEveryFanOutFolder(objects))
        #expect(throws: CacheError.self) { try ContentStore(root: directory.path + "/cache") }
        #expect(unlink(objects + "/d9") == 0)
        _ = try ContentStore(root: directory.path + "/cache")
        #expect(ContentStore.hasEveryFanOutFolder(objects))
        #expect(rmdir(objects + "/c4") == 0)
        #expect(!ContentStore.hasEveryFanOutFolder(objects))
        _ = try ContentStore(root: directory.path + "/cache")
        #expect(ContentStore.hasEveryFanOutFolder(objects))
        // Names that are not fan-out folders are not counted.
        #expect(FileManager.default.createFile(atPath: objects + "/C4", contents: nil))
        #expect(mkdir(objects + "/zz", 0o755) == 0)
        #expect(ContentStore.hasEveryFanOutFolder(objects))
        #expect(rmdir(objects + "/00") == 0)
        #expect(!ContentStore.hasEveryFanOutFolder(objects))
    }

    /// Stored content is found by its SHA-256 (the object's name) or by another algorithm's hash
    /// a row was verified against; the hash index holds only the rows of other algorithms.
    @Test func storedContentIsFoundByNameOrByAnotherAlgorithmsHash() throws {
        let directory = TemporaryDirectory()
        let index = try CacheIndex(path: directory.path + "/index.sqlite", create: true)
        let a = String(repeating: "a", count: 64), b = String(repeating: "b", count: 64)
        let md5 = "0cc175b9c0f1b6a831c399e269772661"
        try index.apply(
            upserts: [
                IndexRecord(url: "http://h/a", hash: "sha256:" + a, object: a, size: 1, fetchedAt: 0, lastUsed: 0),
                IndexRecord(url: "http://h/b", hash: "md5:" + md5, object: b, size: 2, fetchedAt: 0, lastUsed: 0),
            ],
            touches: [], removals: [], at: 0)
        func found(_ text: String) throws -> String? {
            try index.storedObject(for: ContentHash.parse(text).get()).map { "\($0.object) \($0.size)" }
        }
        #expect(try found("sha256:" + a) == a + " 1")
        #expect(try found("md5:" + md5) == b + " 2")
        #expect(try found("sha256:" + b) == b + " 2", "by name, whatever the row was verified against")
        #expect(try found("sha256:" + String(repeating: "c", count: 64)) == nil)
        #expect(try found("md5:" + String(repeating: "0", count: 32)) == nil)
    }

    /// A new cache's first run leaves the index of rows by object out until its rows are in;
    /// lookups by object work without it, and a writer that finds it missing (a first run that
    /// stopped early) builds it as it opens the index. A reader never does.
    @Test func theObjectIndexOfANewCacheIsBuiltAfterItsFirstRows() throws {
        let directory = TemporaryDirectory()
        let path = directory.path + "/index.sqlite"
        let a = String(repeating: "a", count: 64)
        func hasObjectIndex(_ index: CacheIndex) throws -> Bool { try CacheIndex.hasIndex(index.database, "entries_object") }

        let first = try CacheIndex(path: path, create: true, deferObjectIndex: true)
        #expect(first.objectIndexDeferred)
        #expect(try !hasObjectIndex(first))
        try first.apply(
            upserts: [IndexRecord(url: "http://h/a", hash: "sha256:" + a, object: a, size: 1, fetchedAt: 0, lastUsed: 0)],
            touches: [], removals: [], at: 0)
        #expect(try first.storedObject(for: ContentHash.parse("sha256:" + a).get())?.size == 1)
        #expect(try first.references(object: a) == 1)
        let reader = try CacheIndex(path: path, create: false, readOnly: true)
        #expect(try !hasObjectIndex(reader) && !reader.objectIndexDeferred)
        try first.buildObjectIndex()
        #expect(try hasObjectIndex(first) && !first.objectIndexDeferred)
        #expect(try first.references(object: a) == 1)

        // A first run stopped before its end: the next writer builds the index, even one that
        // would defer it for a new cache (this one has tables).
        let other = directory.path + "/other.sqlite"
        _ = try CacheIndex(path: other, create: true, deferObjectIndex: true)
        #expect(try !hasObjectIndex(CacheIndex(path: other, create: false, readOnly: true)))
        let next = try CacheIndex(path: other, create: true, deferObjectIndex: true)
        #expect(try hasObjectIndex(next) && !next.objectIndexDeferred)
        // Without `deferObjectIndex` a new cache has it from the start.
        #expect(try hasObjectIndex(CacheIndex(path: directory.path + "/third.sqlite", create: true)))
    }

    @Test func symlinkPlantedAsAnObjectDoesNotCount() throws {
        let directory = TemporaryDirectory()
        let store = try ContentStore(root: directory.path + "/cache")
        let name = String(repeating: "d", count: 64)
        symlink("/etc/passwd", store.objectPath(name))
        #expect(!store.contains(name))
    }

    @Test func staleTemporaryFilesAreRemoved() throws {
        let directory = TemporaryDirectory()
        let store = try ContentStore(root: directory.path + "/cache")
        directory.write("cache/tmp/dl-1", "partial")
        directory.write("cache/tmp/dl-2", "partial")
        #expect(store.removeStaleTemporaryFiles() == 2)
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.tmpDirectory).isEmpty)
    }

    @Test func cacheRootThatIsAFileIsUnusable() {
        let directory = TemporaryDirectory()
        let file = directory.write("cache", "x")
        #expect(throws: CacheError.self) { try ContentStore(root: file) }
    }
}

@Suite(.hangLimit) struct PlantedSymlinkTests {
    @Test(arguments: ["tmp", "objects", "objects/sha256/7f", "index.sqlite"])
    func linkInsideTheCacheIsRefused(name: String) throws {
        let directory = TemporaryDirectory()
        let root = directory.path + "/cache"
        _ = try ContentStore(root: root)
        let outside = directory.path + "/outside"
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        try? FileManager.default.removeItem(atPath: root + "/" + name)
        #expect(symlink(outside, root + "/" + name) == 0)
        #expect(throws: CacheError.self) { try ContentStore(root: root) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside).isEmpty)
    }

    @Test func theRootItselfMayBeALink() throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.path + "/real", withIntermediateDirectories: true)
        #expect(symlink(directory.path + "/real", directory.path + "/link") == 0)
        let store = try ContentStore(root: directory.path + "/link")
        store.completeLayout()
        #expect(FileManager.default.fileExists(atPath: directory.path + "/real/objects/sha256/00"))
        #expect(store.root == directory.path + "/link")
    }
}

@Suite(.hangLimit) struct ObjectDirectoryTests {
    @Test(arguments: [false, true])
    func countsRegularFilesOnly(listed: Bool) throws {
        let directory = TemporaryDirectory()
        let store = try ContentStore(root: directory.path + "/cache")
        store.completeLayout()
        let real = String(repeating: "ab", count: 32)
        let planted = String(repeating: "ac", count: 32)
        directory.write("cache/objects/sha256/ab/" + real, "bytes")
        #expect(symlink(directory.path + "/cache/objects/sha256/ab/" + real, store.objectPath(planted)) == 0)
        let objects = ObjectDirectory(objectsDirectory: store.objectsDirectory)
        if listed { objects.preload() }
        #expect(objects.contains(real))
        #expect(!objects.contains(planted), "a link named like an object is not one")
        #expect(!objects.contains(String(repeating: "cd", count: 32)))
        #expect(!objects.contains("../../etc/passwd"))
        // Same first 48 digits as the real object, different last 16: the whole name is compared.
        #expect(!objects.contains(String(repeating: "ab", count: 24) + String(repeating: "ef", count: 8)))
    }

    @Test func aListingAnswersFromWhatItRead() throws {
        // The listing is a snapshot taken under the run's lock: once read, it answers without a
        // file-system call per object (a name it holds stays present even if the file goes).
        let directory = TemporaryDirectory()
        let store = try ContentStore(root: directory.path + "/cache")
        let names = ["a", "b", "c"].map { $0 + String(repeating: "0123456789abcdef", count: 4).dropFirst() }
        for name in names { directory.write("cache/objects/sha256/" + name.prefix(2) + "/" + name, name) }
        let objects = ObjectDirectory(objectsDirectory: store.objectsDirectory)
        objects.preload()
        for name in names { #expect(unlink(store.objectPath(name)) == 0) }
        for name in names { #expect(objects.contains(name), "\(name) answered from the listing") }
        let unlisted = ObjectDirectory(objectsDirectory: store.objectsDirectory)
        for name in names { #expect(!unlisted.contains(name)) }
    }

    @Test func aListingNamesTheObjectsNoRecordNames() throws {
        let directory = TemporaryDirectory()
        let store = try ContentStore(root: directory.path + "/cache")
        let names = ["a", "b", "c"].map { $0 + String(repeating: "0123456789abcdef", count: 4).dropFirst() }
        for name in names { directory.write("cache/objects/sha256/" + name.prefix(2) + "/" + name, name) }
        let objects = ObjectDirectory(objectsDirectory: store.objectsDirectory)
        #expect(objects.unreferenced(by: []) == nil, "nothing listed, nothing to say")
        objects.preload()
        let record = IndexRecord(url: "https://a.example/1", hash: nil, object: names[1], size: 1, fetchedAt: 0, lastUsed: 0)
        #expect(objects.unreferenced(by: [record])?.sorted() == [names[0], names[2]])
    }
}

/// Store errors keep their cause as data.
@Suite(.hangLimit) struct StoreErrorTests {
    @Test func aLockThatCannotBeOpenedSaysWhichCallFailedAndErrno() async throws {
        let directory = TemporaryDirectory()
        let missing = directory.path + "/missing"
        do {
            _ = try await CacheLock(directory: missing, wait: 0, context: RunContext())
            Issue.record("a lock in a missing folder was taken")
        } catch {
            guard case .system(let cause) = error else { Issue.record("\(error)"); return }
            #expect(cause == SystemError("open", missing + "/lock", code: ENOENT))
            #expect(error.description == "cache unusable: \(missing)/lock: No such file or directory (open)")
        }
    }
}
