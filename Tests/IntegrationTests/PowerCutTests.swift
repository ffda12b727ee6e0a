import Foundation
import Glibc
import Testing
import WorkerTestSupport

/// Power cuts (PRODUCT.md, "A power cut loses nothing it said it kept"): the binary's writing
/// commands on a cache inside lossyfs (Tests/tools/lossyfs.py), a FUSE file system that forgets,
/// when its power is cut, every byte and name that was not synced. The checks are the harness's
/// (Tests/tools/power_cut.py); `scripts/power-cut.sh` runs the long form.
@Suite(.hangLimit, .serialized, .enabled(if: Conditions.canUseFUSE, "needs root, /dev/fuse and fusermount3"))
struct PowerCutTests {
    static let tools = ActionTests.repository + "/Tests/tools"

    /// Runs the harness; its last line, and the lines that name what it found.
    func cuts(_ count: Int, seed: Int, _ options: [String] = []) async throws -> (last: String, findings: [String], code: Int32) {
        let result = try await WorkerBinary.run(
            [Self.tools + "/power_cut.py", "\(count)", "\(seed)", "--worker", WorkerBinary.path]
                + options, environment: ["PYTHONWARNINGS": "ignore"],
            executable: try RegistryTokenService.python(), seconds: 900)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        return (lines.last ?? result.stderr, lines.filter { $0.hasPrefix("cut ") }, result.code)
    }

    /// The file system's own tests: synced bytes and names survive a cut, unsynced ones do not
    /// (a folder's names until that folder is synced), hard links stay one file, a failed fsync
    /// loses its writes even when a retry succeeds, `cut-at` fails that change and every later one.
    @Test func lossyfsForgetsExactlyWhatADiskMay() async throws {
        let result = try await WorkerBinary.run(
            [Self.tools + "/test_lossyfs.py"], environment: ["PYTHONWARNINGS": "ignore"],
            directory: Self.tools, executable: try RegistryTokenService.python(), seconds: 300)
        #expect(result.code == 0, "\(result.stderr.suffix(3000))")
        #expect(result.stderr.contains("Ran 14 tests"), "\(result.stderr.suffix(500))")
    }

    /// Two cuts of each of the nine commands at seeded changes (one with an fsync failing), with
    /// the index's WAL and its rollback journal: nothing lost, torn or left for a person.
    @Test func everyWritingCommandSurvivesCutsAtSeededChanges() async throws {
        let run = try await cuts(18, seed: 20_261_202, ["--fsync-failures", "2"])
        #expect(
            run.last == "power cuts: 18, lost 0, torn 0, trees incomplete 0, needs a person 0 (fetched again: 0)",
            "\(run.findings.prefix(20).joined(separator: "\n"))\n\(run.last)")
        #expect(run.code == 0)
    }

    /// A cut just after a cold sync ended keeps everything its report says it stored: the new
    /// cache's own folder is on the disk (its parent flushed), and on a file system where syncfs
    /// reaches no storage (FUSE) each object and its folder are flushed before the rows commit.
    @Test func aCutAfterAColdSyncKeepsWhatItsReportSays() async throws {
        let run = try await cuts(2, seed: 1, ["--only", "sync (cold)", "--at-end", "--fsync-failures", "0"])
        #expect(run.last.hasPrefix("power cuts: 2, lost 0, torn 0,"), "\(run.findings.prefix(5).joined(separator: "\n"))\n\(run.last)")
    }

    /// `gc` cut at every third change, with some folders' names kept (as if their metadata
    /// reached the disk at once): the rows' removal is on the disk before any object file goes —
    /// the WAL flushed at the commit, the rollback journal's deletion flushed — so no row is left
    /// naming a file a cut let go.
    @Test(arguments: [("wal", "1"), ("rollback", "0.5")])
    func gcCutAnywhereLeavesNoRowWithoutItsObject(journal: String, keepFolders: String) async throws {
        let run = try await cuts(
            100, seed: 1,
            [
                "--only", "gc", "--journal", journal, "--every", "3", "--keep-folders", keepFolders,
                "--tear", "0", "--fsync-failures", "0",
            ])
        let count = Int(run.last.split(separator: ",").first?.split(separator: " ").last ?? "") ?? 0
        #expect(count >= 15, "a cut at every third of gc's changes: \(run.last)")
        #expect(
            run.last.hasSuffix(", lost 0, torn 0, trees incomplete 0, needs a person 0 (fetched again: 0)"),
            "\(run.findings.prefix(5).joined(separator: "\n"))\n\(run.last)")
    }

    /// A cut just after `sync --tree` switched its link finds the new version whole (its folders
    /// and its name flushed before the link), never a link to a version the disk lacks.
    @Test func aCutAfterATreePublishFindsACompleteVersion() async throws {
        let run = try await cuts(2, seed: 2, ["--only", "sync --tree", "--at-end", "--fsync-failures", "0"])
        #expect(
            run.last.hasPrefix("power cuts: 2, lost 0, torn 0, trees incomplete 0,"),
            "\(run.findings.prefix(5).joined(separator: "\n"))\n\(run.last)")
    }

    /// A report and metrics written into the cache's disk are whole or absent after a cut,
    /// never a name on bytes that did not arrive.
    @Test func aReportInsideTheDiskIsWholeAfterACut() async throws {
        let run = try await cuts(3, seed: 3, ["--only", "sync with a report", "--at-end", "--fsync-failures", "0"])
        #expect(run.last.hasPrefix("power cuts: 3, lost 0, torn 0,"), "\(run.findings.prefix(5).joined(separator: "\n"))\n\(run.last)")
    }

    /// An fsync failing while a remote manifest is accepted ends the run with exit 4: the copy
    /// accepted before does not stand in for the cache's own disk failing.
    @Test func anFsyncFailingWhileAManifestIsAcceptedIsExit4() async throws {
        let run = try await cuts(3, seed: 4, ["--only", "a remote manifest's acceptance", "--fsync-failures", "3"])
        #expect(
            run.last.hasSuffix("needs a person 0 (fetched again: 0)") && run.last.contains("lost 0, torn 0"),
            "\(run.findings.prefix(5).joined(separator: "\n"))\n\(run.last)")
    }
}
