import Foundation
import WorkerTestSupport

/// Runs the built `worker` executable and captures its exit code and output.
enum WorkerBinary {
    struct Result {
        let code: Int32
        let stdout: String
        let stderr: String
    }

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

    /// Starts the executable (or `executable`) with its output going to `log`; the caller waits
    /// for (or kills) it.
    static func spawn(_ arguments: [String], log: String, executable: String? = nil) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable ?? path)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "WORKER_CACHE_DIR")
        process.environment = environment
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        return process
    }

    static func run(_ arguments: [String], environment: [String: String] = [:], directory: String? = nil,
                    executable: String? = nil) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable ?? path)
        process.arguments = arguments
        var merged = ProcessInfo.processInfo.environment
        merged.removeValue(forKey: "WORKER_CACHE_DIR")
        for (key, value) in environment { merged[key] = value }
        process.environment = merged
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Both pipes are drained at once (stderr on another thread): reading one to its end first
        // would block forever once the child fills the other pipe's buffer.
        let errBox = DataBox()
        let errReader = Thread { errBox.data = err.fileHandleForReading.readDataToEndOfFile(); errBox.done.signal() }
        errReader.start()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        errBox.done.wait()
        let errData = errBox.data
        process.waitUntilExit()
        return Result(code: process.terminationStatus,
                      stdout: String(decoding: outData, as: UTF8.self),
                      stderr: String(decoding: errData, as: UTF8.self))
    }
}

/// The stderr bytes a reader thread collects; `done` is signalled once they are all read.
private final class DataBox: @unchecked Sendable {
    // @unchecked: written by the reader thread before `done.signal()`, read only after `done.wait()`.
    var data = Data()
    let done = DispatchSemaphore(value: 0)
}

extension WorkerBinary {
    /// Runs the executable with output (stdout and stderr together) to a file, killing it after
    /// `seconds` (a hang is then a failed expectation, not a stuck test run).
    static func runBounded(_ arguments: [String], seconds: Double) throws -> Result {
        try runBoundedReportingSignal(arguments, seconds: seconds).result
    }

    /// `runBounded`, and whether a signal ended the process (a trap, or the kill past `seconds`).
    static func runBoundedReportingSignal(_ arguments: [String], seconds: Double) throws -> (result: Result, signalled: Bool) {
        let log = FileManager.default.temporaryDirectory.path + "/worker-bounded-\(UUID().uuidString).log"
        defer { try? FileManager.default.removeItem(atPath: log) }
        let process = try spawn(arguments, log: log)
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning, Date() < deadline { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return (Result(code: process.terminationStatus, stdout: text, stderr: text), process.terminationReason == .uncaughtSignal)
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
