import Foundation
import Synchronization
import Testing
import WorkerStore
import WorkerSupport
import WorkerTestSupport

/// SIGINT and SIGTERM stop a sync gracefully, from the binary: what finished is indexed and kept,
/// the rest fails as `cancelled` in the report, and the process ends by the signal itself.
@Suite(.serialized, .hangLimit) struct StopSignalTests {
    /// 50 answers of 600 ms, two at a time: about 15 s of work.
    private func startSlowSync(
        _ harness: Harness, keys: [String], report: String,
        through shell: String? = nil
    ) throws -> ChildProcess {
        let manifest = harness.manifest(keys.map { ("/slow/600/gen/\($0)", TestOrigin.generated($0)) })
        let arguments = ["sync", manifest, "--cache-dir", harness.cache, "-j", "2", "--report", report, "--progress", "never"]
        let log = harness.directory.path + "/run.log"
        guard let shell else { return try WorkerBinary.spawn(arguments, log: log) }
        // `exec` keeps the dispositions the shell set: an ignored signal stays ignored.
        return try WorkerBinary.spawn(
            ["-c", "\(shell); exec \"$0\" \"$@\"", WorkerBinary.path] + arguments,
            log: log, executable: "/bin/sh")
    }

    /// Sends `signals`, in order, from a thread of its own once `condition` holds (checked every
    /// 10 ms for up to `seconds`; the signals go right after the check that held); whether the
    /// process was still running when they went. A thread, not a task: beside a busy suite on two
    /// cores a task woke after the run had ended by itself.
    private func send(
        _ signals: [Int32], to process: ChildProcess, seconds: Double = 30,
        when condition: @escaping @Sendable () -> Bool
    ) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            Thread {
                let end = Date().addingTimeInterval(seconds)
                var held = condition()
                while !held, Date() < end {
                    usleep(10_000)
                    held = condition()
                }
                let sent = held && process.isRunning
                if sent { signals.forEach { kill(process.processIdentifier, $0) } }
                continuation.resume(returning: sent)
            }.start()
        }
    }

    /// Waits up to `seconds` for the process to end (killing it if it does not); whether it did.
    private func waitForExit(_ process: ChildProcess, seconds: Double) async -> Bool {
        !(await process.exited(killingAfter: seconds))
    }

    private func entries(_ report: String) throws -> [[String: Any]] {
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report)))
        return try #require((object as? [String: Any])?["entries"] as? [[String: Any]])
    }

    @Test(arguments: [SIGTERM, SIGINT])
    func aStopSignalKeepsWhatFinishedAndEndsByIt(_ signal: Int32) async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let keys = (0..<50).map { "k\($0)" }
        let report = harness.directory.path + "/report.json"
        let process = try startSlowSync(harness, keys: keys, report: report)
        // The fourth request starts once the window has grown past one: the first answer is in.
        #expect(
            await send([signal], to: process) { harness.origin.totalRequests >= 4 },
            "the run had work left when the signal came")
        #expect(await waitForExit(process, seconds: 6), "the run stops within seconds, not after its remaining downloads")
        #expect(
            process.terminationReason == .uncaughtSignal && process.terminationStatus == signal,
            "ends by the signal: \(process.terminationReason.rawValue) \(process.terminationStatus)")
        let name = signal == SIGINT ? "SIGINT" : "SIGTERM"
        let log = try String(contentsOfFile: harness.directory.path + "/run.log", encoding: .utf8)
        #expect(log.contains("\(name): stopping"), "\(log)")

        // The report is written: what finished is added, everything else cancelled by the signal.
        let rows = try entries(report)
        #expect(rows.count == keys.count)
        let added = rows.filter { $0["status"] as? String == "added" }
        let failed = rows.filter { $0["status"] as? String == "failed" }
        #expect(added.count >= 1 && added.count + failed.count == keys.count, "\(rows)")
        #expect(!failed.isEmpty)
        for row in failed {
            #expect(row["reason"] as? String == "cancelled")
            #expect((row["error"] as? String)?.contains("stopped by \(name)") == true, "\(row)")
        }

        // The finished ones are indexed and intact; the next run fetches only the rest.
        #expect(try harness.records().count == added.count)
        let verify = try await WorkerBinary.run(["verify", "--cache-dir", harness.cache])
        #expect(verify.code == 0, "\(verify.stdout)\(verify.stderr)")
        let before = harness.origin.totalRequests
        let manifest = harness.directory.path + "/m.yaml"
        let next = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "-q"])
        #expect(next.code == 0, "\(next.stderr)")
        #expect(harness.origin.totalRequests - before == failed.count)
    }

    @Test func aSecondSignalEndsTheRunAtOnce() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let report = harness.directory.path + "/report.json"
        let process = try startSlowSync(harness, keys: (0..<50).map { "d\($0)" }, report: report)
        // The graceful stop takes milliseconds; the second signal comes microseconds after the
        // first, so the run is still stopping: it ends by the second, not by the first. (SIGINT
        // first: of two pending signals the kernel delivers the lower number first.)
        #expect(await send([SIGINT, SIGTERM], to: process) { harness.origin.totalRequests >= 2 })
        #expect(await waitForExit(process, seconds: 6))
        #expect(
            process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGTERM,
            "ends by the second signal: \(process.terminationReason.rawValue) \(process.terminationStatus)")
        // Crash-safe as ever: what the next run finds is consistent.
        let verify = try await WorkerBinary.run(["verify", "--cache-dir", harness.cache])
        #expect(verify.code == 0, "\(verify.stdout)\(verify.stderr)")
    }

    @Test func getStopsGracefullyToo() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let log = harness.directory.path + "/get.log"
        let process = try WorkerBinary.spawn(
            ["get", harness.origin.url("/slow/20000/gen/g"), "--cache-dir", harness.cache],
            log: log)
        #expect(await send([SIGTERM], to: process) { harness.origin.totalRequests >= 1 })
        #expect(await waitForExit(process, seconds: 6), "stops at the signal, not after the 20 s answer")
        #expect(process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGTERM)
        let text = try String(contentsOfFile: log, encoding: .utf8)
        #expect(text.contains("SIGTERM: stopping") && text.contains("cancelled: the run was stopped by SIGTERM"), "\(text)")
    }

    @Test func aStopSignalEndsAWaitForTheLock() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        try FileManager.default.createDirectory(atPath: harness.cache, withIntermediateDirectories: true)
        let lock = try await CacheLock(directory: harness.cache, wait: 0, context: RunContext())
        defer { lock.release() }
        let manifest = harness.manifest([("/f/a", harness.serve("a"))])
        let log = harness.directory.path + "/run.log"
        let process = try WorkerBinary.spawn(["sync", manifest, "--cache-dir", harness.cache, "--wait-lock", "5m"], log: log)
        #expect(
            await send([SIGTERM], to: process) {
                (try? String(contentsOfFile: log, encoding: .utf8))?.contains("waiting for the cache lock") == true
            }, "waiting for the lock")
        #expect(await waitForExit(process, seconds: 6), "the wait ends at the signal, not after --wait-lock")
        #expect(process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGTERM)
        #expect(harness.origin.totalRequests == 0)
    }

    @Test func anIgnoredSignalStaysIgnored() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let report = harness.directory.path + "/report.json"
        // As `nohup` or a shell's background job leaves SIGINT.
        let process = try startSlowSync(harness, keys: (0..<50).map { "i\($0)" }, report: report, through: "trap '' INT")
        // The requests made when SIGINT went, counted on the sending thread (this task may
        // resume much later).
        let atSIGINT = Mutex(0)
        #expect(
            await send([SIGINT], to: process) {
                let requests = harness.origin.totalRequests
                atSIGINT.withLock { $0 = requests }
                return requests >= 2
            })
        let before = atSIGINT.withLock { $0 }
        // Ignored: the run goes on asking for its files after the signal (not a guessed sleep),
        // and is still running for the next one.
        #expect(
            await send([SIGTERM], to: process) { harness.origin.totalRequests >= before + 3 },
            "SIGINT was ignored: requests after it, and the run still going")
        #expect(await waitForExit(process, seconds: 6))
        #expect(process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGTERM)
        #expect(try entries(report).contains { ($0["error"] as? String)?.contains("stopped by SIGTERM") == true })
    }
}
