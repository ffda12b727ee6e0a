import Foundation
import Testing
import WorkerTestSupport

/// What a program the tests start receives from the suite: its three standard descriptors and
/// nothing else, whatever the suite holds open, and signals as a shell would leave them.
@Suite(.hangLimit) struct ChildProcessTests {
    @Test func aChildGetsOnlyItsStandardDescriptorsWhileTheSuiteHoldsThousands() async throws {
        // More than glibc's directory buffer lists at once (about 1,300): where Foundation's
        // `Process` read past it.
        let held = (0..<2000).map { _ in open("/dev/null", O_RDONLY) }
        defer { held.forEach { close($0) } }
        #expect(held.allSatisfy { $0 >= 0 })
        let result = try await WorkerBinary.run(["-c", "ls /proc/$$/fd"], executable: "/bin/sh")
        #expect(result.code == 0, "\(result.stderr)")
        #expect(result.stdout.split(separator: "\n").sorted() == ["0", "1", "2"])
    }

    @Test func aChildStartsWithNoSignalIgnoredOrBlocked() async throws {
        // The suite ignores SIGPIPE (libcurl, in process), and exec keeps an ignored signal ignored.
        signal(SIGPIPE, SIG_IGN)
        let result = try await WorkerBinary.run(["-c", "exec grep -E '^Sig(Ign|Blk)' /proc/self/status"], executable: "/bin/sh")
        #expect(result.code == 0, "\(result.stderr)")
        let masks = Dictionary(
            uniqueKeysWithValues: result.stdout.split(separator: "\n").map { line in
                let parts = line.split(separator: "\t")
                return (String(parts[0]), UInt64(parts[1], radix: 16) ?? .max)
            })
        // Standard signals only (1-31): glibc's posix_spawn leaves its own two (32, 33) ignored.
        #expect(masks["SigBlk:"].map { $0 & 0x7fff_ffff } == 0)
        #expect(masks["SigIgn:"].map { $0 & 0x7fff_ffff } == 0, "\(result.stdout)")
    }

    @Test func aChildPastItsLimitIsKilled() async throws {
        let child = try ChildProcess("/bin/sh", ["-c", "sleep 30"])
        let killed = await child.exited(killingAfter: 0.3)
        #expect(killed)
        #expect(child.terminationReason == .uncaughtSignal && child.terminationStatus == SIGKILL)
    }

    @Test func aChildsExitCodeAndOutputFileAreItsOwn() async throws {
        let directory = TemporaryDirectory()
        let log = directory.path + "/log"
        let child = try ChildProcess("/bin/sh", ["-c", "echo out; echo err >&2; exit 7"], stdout: .file(log), stderr: .file(log))
        #expect(!(await child.exited(killingAfter: 30)))
        #expect(child.terminationReason == .exit && child.terminationStatus == 7)
        #expect(try String(contentsOfFile: log, encoding: .utf8) == "out\nerr\n")
    }
}
