import Foundation
import Synchronization
import Testing
import WorkerTestSupport

/// Runs the built `worker` executable and captures its exit code and output.
///
/// A run is awaited without holding a thread of the cooperative pool (one per core): its output is
/// read on threads of its own and its end is reaped on another (`ChildProcess`), so the suite's
/// tests run side by side while their binaries do. Every run is bounded: past its limit
/// (`defaultLimit` unless given) the process is killed and the test fails naming the command.
enum WorkerBinary {
    struct Result {
        let code: Int32
        let stdout: String
        let stderr: String
        /// A signal ended the process (a crash, or the kill past its limit).
        var signalled = false
        /// It was killed for running past its limit.
        var timedOut = false
        /// From its start to its end (not the wait for a slot).
        var seconds = 0.0
    }

    /// The longest a run may take unless the caller says otherwise.
    static let defaultLimit = 180.0

    /// Runs of the binary at once, over the whole suite: three per core (most runs wait on a slow
    /// origin more than they compute). Tests wait for a slot as tasks (no thread held); without a
    /// bound every test in flight would start its binary at once, and on two cores a run meant to
    /// take a second would take thirty.
    static let slots = AsyncSlots(ProcessInfo.processInfo.activeProcessorCount * 3)

    /// The executable next to the test bundle (`.build/<config>/worker`), or `$WORKER_BIN`.
    static var path: String {
        if let explicit = ProcessInfo.processInfo.environment["WORKER_BIN"] { return explicit }
        var folder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        // On macOS the test binary sits inside a bundle; on Linux it is a file in the build folder.
        while folder.pathExtension == "xctest" || folder.lastPathComponent == "Contents" || folder.lastPathComponent == "MacOS" {
            folder.deleteLastPathComponent()
        }
        return folder.appendingPathComponent("worker").path
    }

    /// The suite's environment without WORKER_CACHE_DIR, with `extra` added.
    private static func environment(_ extra: [String: String] = [:]) -> [String: String] {
        var merged = ProcessInfo.processInfo.environment
        merged.removeValue(forKey: "WORKER_CACHE_DIR")
        for (key, value) in extra { merged[key] = value }
        return merged
    }

    /// Starts the executable (or `executable`) with its output going to `log`; the caller waits
    /// for (or kills) it.
    static func spawn(_ arguments: [String], log: String, executable: String? = nil) throws -> ChildProcess {
        try ChildProcess(executable ?? path, arguments, environment: environment(), stdout: .file(log), stderr: .file(log))
    }

    /// Runs the executable (or `executable`) to its end, at most `seconds`. `prepare` runs once
    /// the run has its slot, right before the process starts (what must be fresh when it starts,
    /// such as a signature that expires soon); `takingSlot: false` runs at once, without one
    /// (a tool `prepare` runs).
    static func run(
        _ arguments: [String], environment extra: [String: String] = [:], directory: String? = nil,
        executable: String? = nil, seconds: Double = defaultLimit, takingSlot: Bool = true,
        prepare: (() async throws -> Void)? = nil
    ) async throws -> Result {
        if takingSlot { await slots.take() }
        defer { if takingSlot { slots.give() } }
        try await prepare?()
        // Both pipes drained at once, each on a thread of its own: reading one to its end first
        // would block forever once the child fills the other's buffer.
        let out = try PipeReader()
        let err = try PipeReader()
        let started = Date()
        let process: ChildProcess
        do {
            process = try ChildProcess(
                executable ?? path, arguments, environment: environment(extra), directory: directory,
                stdout: .descriptor(out.writeEnd), stderr: .descriptor(err.writeEnd))
        } catch {
            out.closeWriteEnd()
            err.closeWriteEnd()
            _ = await (out.text(), err.text())
            throw error
        }
        out.closeWriteEnd()
        err.closeWriteEnd()
        let timedOut = await process.exited(killingAfter: seconds)
        let seconds = Date().timeIntervalSince(started)
        let result = Result(
            code: process.terminationStatus, stdout: await out.text(), stderr: await err.text(),
            signalled: process.terminationReason == .uncaughtSignal, timedOut: timedOut, seconds: seconds)
        if timedOut {
            Issue.record("killed after \(seconds) s: worker \(arguments.joined(separator: " "))\n\(result.stderr.suffix(2000))")
        }
        return result
    }

    /// `run` with stdout and stderr together (both fields hold all of it), at most `seconds`.
    static func runBounded(_ arguments: [String], seconds: Double) async throws -> Result {
        try await runBoundedReportingSignal(arguments, seconds: seconds).result
    }

    /// `runBounded`, and whether a signal ended the process (a trap, or the kill past `seconds`).
    static func runBoundedReportingSignal(_ arguments: [String], seconds: Double) async throws -> (result: Result, signalled: Bool) {
        let log = FileManager.default.temporaryDirectory.path + "/worker-bounded-\(UUID().uuidString).log"
        defer { try? FileManager.default.removeItem(atPath: log) }
        await slots.take()
        defer { slots.give() }
        let started = Date()
        let process = try spawn(arguments, log: log)
        let timedOut = await process.exited(killingAfter: seconds)
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        let signalled = process.terminationReason == .uncaughtSignal
        return (
            Result(
                code: process.terminationStatus, stdout: text, stderr: text, signalled: signalled, timedOut: timedOut,
                seconds: Date().timeIntervalSince(started)), signalled
        )
    }

    /// The user+system CPU seconds a run of the executable took (bash's `time`): what a test of
    /// "at once" measures, whatever else shares the cores.
    static func cpuSeconds(_ arguments: [String]) async throws -> Double {
        let timed = try await run(
            ["-c", "TIMEFORMAT='%U %S'; { time \"$0\" \"$@\" >/dev/null 2>&1; } 2>&1", path] + arguments,
            executable: "/bin/bash")
        let parts = timed.stdout.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { Double($0) }
        guard parts.count == 2 else { throw CPUTimeUnread(output: timed.stdout + timed.stderr) }
        return parts[0] + parts[1]
    }

    struct CPUTimeUnread: Error { let output: String }

    /// For a thread of the test's own (never the cooperative pool): `run`, blocking.
    static func runBlocking(_ arguments: [String], seconds: Double = defaultLimit) -> Result? {
        let box = Mutex<Result?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            let result = try? await run(arguments, seconds: seconds)
            box.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return box.withLock { $0 }
    }
}

/// A counting semaphore for tasks: `take` waits (suspended, no thread held) for a free slot.
final class AsyncSlots: Sendable {
    private struct State {
        var free: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Mutex<State>

    init(_ count: Int) {
        state = Mutex(State(free: max(1, count)))
    }

    func take() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.free > 0 {
                    state.free -= 1
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    func give() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiters.isEmpty {
                state.free += 1
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}

extension WorkerBinary {
    /// A copy of the executable another user can run (wherever the build folder is), in
    /// `directory`, which is opened to other users too; its path.
    static func copyForOtherUsers(into directory: TemporaryDirectory) throws -> String {
        let binary = directory.path + "/worker-bin"
        try? FileManager.default.removeItem(atPath: binary)
        try FileManager.default.copyItem(atPath: path, toPath: binary)
        chmod(binary, 0o755)
        chmod(directory.path, 0o755)
        return binary
    }
}
