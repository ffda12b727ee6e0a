import Foundation
import Glibc
import Testing
import WorkerTestSupport

/// What some tests need from the machine, in one place: every conditional test is
/// `.enabled(if:)` one of these, with its reason, so a skip is reported as a skip, never a pass.
/// CI runs as root, where all of them hold: `.ci/run` sets `WORKER_TESTS_REQUIRE_ALL=1`, and then
/// `ConditionsTests` fails unless each does — no test is skipped there.
enum Conditions {
    static let isRoot = geteuid() == 0
    /// Root, and `setpriv` to run the binary as `nobody` and other users.
    static let canRunAsOtherUsers =
        isRoot && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
        && FileManager.default.isExecutableFile(atPath: "/usr/bin/prlimit")
    /// Root, and a mount namespace of the test's own (`unshare -m`) where a tmpfs or a read-only
    /// bind mount can be made.
    static let canMount: Bool = {
        guard isRoot, FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare") else { return false }
        guard let probe = try? ChildProcess("/usr/bin/unshare", ["-m", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /mnt"])
        else { return false }
        probe.waitUntilExit()
        return probe.terminationStatus == 0
    }()
    /// Root, /dev/fuse and fusermount3 (Debian's fuse3): lossyfs can be mounted.
    static let canUseFUSE =
        isRoot && access("/dev/fuse", R_OK | W_OK) == 0
        && FileManager.default.isExecutableFile(atPath: "/usr/bin/fusermount3")
    /// Root and openssh-server's sshd: an SFTP server of the test's own.
    static let canRunSSHD = isRoot && SSHServer.isInstalled
}

@Suite(.hangLimit) struct ConditionsTests {
    @Test(
        .enabled(
            if: ProcessInfo.processInfo.environment["WORKER_TESTS_REQUIRE_ALL"] == "1",
            "only where every test must run (CI sets WORKER_TESTS_REQUIRE_ALL=1)"))
    func everyConditionalTestRunsHere() {
        #expect(Conditions.isRoot, "tests that need root were skipped")
        #expect(Conditions.canRunAsOtherUsers, "tests that run the binary as other users were skipped (setpriv, prlimit)")
        #expect(Conditions.canMount, "tests that need a mount namespace were skipped (unshare -m, mount)")
        #expect(Conditions.canUseFUSE, "the power-cut tests were skipped (root, /dev/fuse, fusermount3)")
        #expect(Conditions.canRunSSHD, "the SFTP tests were skipped (root, openssh-server)")
    }
}
