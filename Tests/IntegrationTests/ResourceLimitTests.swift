import Foundation
import Glibc
import Testing
import WorkerTestSupport

/// A run the system will not give a thread (RLIMIT_NPROC, for an unprivileged user: root is not
/// held to it) ends with a message and exit 4, never by a trap.
@Suite(.hangLimit) struct ResourceLimitTests {
    /// A user id no other test runs as: the limit counts every thread of the user.
    static let user: UInt32 = 65533

    @Test(.enabled(if: Conditions.canRunAsOtherUsers, "needs root to run as another user under a process limit"))
    func aRunThatCannotStartItsDownloadThreadsExits4() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let binary = try WorkerBinary.copyForOtherUsers(into: harness.directory)
        let manifest = harness.manifest([("/f/n", harness.serve("n"))])
        chmod(manifest, 0o644)
        var refused = 0
        // Few threads: the download engines cannot start; more: the run works. (Fewer still, the
        // Swift runtime itself cannot start its own threads: not this program's to handle.)
        for limit in 4...10 {
            let cache = harness.directory.path + "/cache-\(limit)"
            try FileManager.default.createDirectory(atPath: cache, withIntermediateDirectories: true)
            chown(cache, Self.user, Self.user)
            let log = harness.directory.path + "/run-\(limit).log"
            let process = try WorkerBinary.spawn(
                [
                    "--nproc=\(limit)", "/usr/bin/setpriv", "--reuid=\(Self.user)", "--regid=\(Self.user)",
                    "--clear-groups", "--", binary, "sync", manifest, "--cache-dir", cache,
                ],
                log: log, executable: "/usr/bin/prlimit")
            let deadline = Date().addingTimeInterval(15)
            while process.isRunning, Date() < deadline { try? await Task.sleep(nanoseconds: 20_000 * 1000) }
            guard !process.isRunning else {
                kill(process.processIdentifier, SIGKILL)
                await process.exited()
                continue
            }
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            #expect(process.terminationReason == .exit, "nproc \(limit): ended by signal \(process.terminationStatus): \(text)")
            #expect(process.terminationStatus == 0 || process.terminationStatus == 4, "nproc \(limit): \(text)")
            if process.terminationStatus == 4 {
                #expect(text.contains("cannot start a thread for downloads"), "nproc \(limit): \(text)")
                refused += 1
            }
        }
        #expect(refused > 0, "no limit tried made the engines fail to start")
    }
}
