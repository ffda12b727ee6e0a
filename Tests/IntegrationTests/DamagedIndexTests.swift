import Foundation
import Glibc
import Testing
import WorkerTestSupport

@testable import WorkerStore

/// An index damaged by hand or by the disk, through the binary: rows whose URL is not text are
/// dropped by `verify --repair`; a file SQLite finds malformed is named as such, with `clear` as
/// the way out, and `clear` works on it.
@Suite(.hangLimit) struct DamagedIndexTests {
    /// On f94e2a0 such rows were reported and never dropped: verify exited 1 after every repair.
    @Test func rowsWhoseURLIsNotTextAreDroppedByRepair() async throws {
        let directory = TemporaryDirectory()
        let (_, cache) = try await directory.syncedLocalCache()
        let database = try SQLiteDatabase(path: cache + "/index.sqlite", create: false)
        let object = String(repeating: "cd", count: 32)
        try database.execute(
            """
            INSERT INTO entries(url, hash, object, size, fetched_at, last_used) VALUES (CAST(X'687474703A2F2F682F610062' AS TEXT), NULL, '\(object)', 1, 0, 0);
            INSERT INTO entries(url, hash, object, size, fetched_at, last_used) VALUES (CAST(X'687474703A2F2F682FFF' AS TEXT), NULL, '\(object)', 1, 0, 0);
            """)
        let found = try await WorkerBinary.run(["verify", "--cache-dir", cache])
        #expect(found.code == 1 && found.stdout.contains("2 damaged index rows"), "\(found.stdout)")
        let repaired = try await WorkerBinary.run(["verify", "--repair", "--cache-dir", cache])
        #expect(repaired.code == 0, "\(repaired.stdout) \(repaired.stderr)")
        let again = try await WorkerBinary.run(["verify", "--cache-dir", cache])
        #expect(again.code == 0, "\(again.stdout)")
        #expect(try await WorkerBinary.run(["status", "--cache-dir", cache]).stdout.contains("entries    1"))
    }

    /// A malformed page: verify says the index is damaged and that `clear` starts over (f94e2a0
    /// advised `--repair`, which exits 4); `--repair` says the same; `clear` clears it.
    @Test func aMalformedIndexPointsToClearWhichWorks() async throws {
        let directory = TemporaryDirectory()
        var manifest = "version: 1\nentries:\n"
        for number in 0..<600 {
            directory.write("site/f\(number).txt", "file \(number)\n")
            manifest += "  - url: f\(number).txt\n"
        }
        let path = directory.write("site/m.yaml", manifest)
        let cache = directory.path + "/cache"
        try #require(try await WorkerBinary.run(["sync", path, "--cache-dir", cache]).code == 0)
        // Pages of the index b-trees overwritten (the WAL was checkpointed as the run ended).
        let file = try FileHandle(forWritingTo: URL(fileURLWithPath: cache + "/index.sqlite"))
        try file.seek(toOffset: 4096 * 5)
        file.write(Data(repeating: 7, count: 4096 * 3))
        try file.close()
        let verify = try await WorkerBinary.run(["verify", "--cache-dir", cache])
        #expect(verify.code == 1, "\(verify.code) \(verify.stdout) \(verify.stderr)")
        #expect(verify.stdout.contains("the index is damaged") && verify.stdout.contains("`worker clear`"), "\(verify.stdout)")
        #expect(!verify.stdout.contains("--repair"), "\(verify.stdout)")
        let repair = try await WorkerBinary.run(["verify", "--repair", "--cache-dir", cache])
        #expect(repair.code == 4 && repair.stderr.contains("`worker clear`"), "\(repair.code) \(repair.stderr)")
        let clear = try await WorkerBinary.run(["clear", "--cache-dir", cache])
        #expect(clear.code == 0, "\(clear.code) \(clear.stderr)")
        #expect(try await WorkerBinary.run(["sync", path, "--cache-dir", cache]).code == 0)
        #expect(try await WorkerBinary.run(["verify", "--cache-dir", cache]).code == 0)
    }
}
