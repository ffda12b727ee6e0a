import Foundation
import Testing
import WorkerTestSupport

/// One test per origin fault mode, through the built binary: the reason code, the exit code, the
/// other entry still succeeds, and no bad bytes are stored.
@Suite(.hangLimit) struct FaultModeTests {
    struct Outcome {
        let code: Int32
        let stderr: String
        /// The report entry of the faulty URL.
        let entry: [String: Any]
        let objects: [String]
        let temporaryFiles: [String]
        /// The run's own duration (its report's), not the wait for a slot or a process start.
        let seconds: Double
    }

    /// Syncs a good entry plus `path` (expected to hold `expected`, if given) and returns the outcome.
    func run(_ harness: Harness, _ path: String, expected: [UInt8]? = nil, _ arguments: [String] = []) async throws -> Outcome {
        let good = harness.serve("good")
        let served = harness.serve("payload", String(repeating: "payload ", count: 64))
        let faulty = expected ?? served
        let manifest = harness.manifest([("/f/good", good), (path, faulty)])
        let reportPath = harness.directory.path + "/report.json"
        let result = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--report", reportPath] + arguments)
        let report = try #require(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: reportPath))) as? [String: Any])
        let seconds = try #require(report["duration_seconds"] as? Double)
        let entries = try #require(report["entries"] as? [[String: Any]])
        let good_ = try #require(entries.first { ($0["url"] as? String)?.hasSuffix("/f/good") == true })
        #expect(good_["status"] as? String == "added", "the other entry succeeds")
        let entry = try #require(entries.first { $0["url"] as? String == harness.origin.url(path) })
        let outcome = Outcome(
            code: result.code, stderr: result.stderr, entry: entry, objects: harness.objects(),
            temporaryFiles: harness.temporaryFiles(), seconds: seconds)
        #expect(outcome.temporaryFiles.isEmpty, "no temporary file is left")
        if entry["status"] as? String == "failed" {
            #expect(outcome.objects == [sha256(good)], "only the good body is stored")
            #expect(result.code == 1)
        }
        return outcome
    }

    @Test func truncatedBodyFailsAsConnectionAfterRetries() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        defer { Task { await harness.origin.stop() } }
        let outcome = try await run(harness, "/truncate/f/payload", ["--retries", "1"])
        #expect(outcome.entry["reason"] as? String == "connection")
        #expect(outcome.entry["error"] as? String == "truncated body: the connection closed before the declared length arrived")
        #expect(outcome.entry["attempts"] as? Int == 2)
        #expect(harness.origin.hits("/truncate/f/payload") == 2)
    }

    @Test func wrongBytesFailAsHashMismatch() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        defer { Task { await harness.origin.stop() } }
        let outcome = try await run(harness, "/f/payload", expected: Array("something else".utf8))
        #expect(outcome.entry["reason"] as? String == "hash_mismatch")
        #expect(
            outcome.entry["actual_hash"] as? String == "sha256:" + sha256(String(repeating: "payload ", count: 64)),
            "what the served body hashed to")
        #expect(outcome.entry["attempts"] as? Int == 1)
    }

    @Test func slowDripFailsAsTimeoutAtTheEntryTimeout() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        defer { Task { await harness.origin.stop() } }
        // The whole drip (512 bytes, one every 100 ms) would take 51 s: cut at 0.5 s, the run ends
        // in a few (its own clock; a loaded machine adds to it, never tens of seconds).
        let outcome = try await run(harness, "/drip/100/f/payload", ["--entry-timeout", "0.5", "--retries", "0"])
        #expect(outcome.entry["reason"] as? String == "timeout")
        #expect(outcome.seconds < 5, "\(outcome.seconds) s")
    }

    @Test func stalledBodyFailsAsTimeoutAtTheReadTimeout() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        defer { Task { await harness.origin.stop() } }
        // Without the read timeout the stall would last to the entry timeout (60 s here).
        let outcome = try await run(harness, "/stall/f/payload", ["--read-timeout", "0.4", "--entry-timeout", "60", "--retries", "0"])
        #expect(outcome.entry["reason"] as? String == "timeout")
        #expect(outcome.seconds < 5, "\(outcome.seconds) s")
    }

    @Test func endlessBodyIsCutAtMaxSize() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        defer { Task { await harness.origin.stop() } }
        let outcome = try await run(harness, "/endless", ["--max-size", "1MiB"])
        #expect(outcome.entry["reason"] as? String == "too_large")
        #expect(outcome.entry["attempts"] as? Int == 1, "too_large is not retried")
    }

    @Test func declaredLengthOverMaxSizeIsRefusedBeforeTheBody() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        defer { Task { await harness.origin.stop() } }
        let outcome = try await run(harness, "/f/payload", ["--max-size", "100"])
        #expect(outcome.entry["reason"] as? String == "too_large")
        #expect((outcome.entry["error"] as? String)?.hasPrefix("Content-Length 512 exceeds") == true)
    }

    @Test(arguments: [500, 503, 408])
    func serverErrorThenSuccessIsRetried(code: Int) async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        defer { Task { await harness.origin.stop() } }
        let outcome = try await run(harness, "/flaky/2/\(code)/f/payload", ["--retries", "3"])
        #expect(outcome.code == 0)
        #expect(outcome.entry["status"] as? String == "added")
        #expect(outcome.entry["attempts"] as? Int == 3)
    }

    @Test func tooManyRequestsHonoursRetryAfter() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        defer { Task { await harness.origin.stop() } }
        let outcome = try await run(harness, "/flaky/1/429/f/payload?retry-after=1", ["--retries", "2"])
        #expect(outcome.code == 0)
        #expect(outcome.entry["attempts"] as? Int == 2)
        #expect(outcome.seconds >= 1.0, "waited as Retry-After asked")
    }

    @Test func persistentServerErrorFailsWithItsStatus() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        defer { Task { await harness.origin.stop() } }
        let outcome = try await run(harness, "/status/503", ["--retries", "2"])
        #expect(outcome.code == 1)
        #expect(outcome.entry["reason"] as? String == "http_status")
        #expect(outcome.entry["http_status"] as? Int == 503)
        #expect(outcome.entry["attempts"] as? Int == 3)
        #expect(outcome.stderr.contains("(3 attempts)"))
    }

    @Test func connectionResetFailsAsConnection() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        defer { Task { await harness.origin.stop() } }
        let outcome = try await run(harness, "/reset/f/payload", ["--retries", "1"])
        #expect(outcome.entry["reason"] as? String == "connection")
        #expect(outcome.entry["attempts"] as? Int == 2)
    }

    @Test func redirectChainIsFollowed() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        defer { Task { await harness.origin.stop() } }
        let outcome = try await run(harness, "/redirect/3/f/payload")
        #expect(outcome.code == 0)
        #expect(outcome.entry["status"] as? String == "added")
    }

    @Test func redirectLoopFailsAsRedirect() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        defer { Task { await harness.origin.stop() } }
        let outcome = try await run(harness, "/loop/a")
        #expect(outcome.entry["reason"] as? String == "redirect")
        #expect((outcome.entry["error"] as? String)?.hasPrefix("redirect loop") == true)
    }

    @Test func redirectToAnotherSchemeFailsAsScheme() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        defer { Task { await harness.origin.stop() } }
        let outcome = try await run(harness, "/goto?to=file:///etc/passwd")
        #expect(outcome.entry["reason"] as? String == "scheme")
    }

    @Test func unreachableHostFailsAsConnection() async throws {
        // A port nothing listens on: the connect is refused at once.
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let manifest = harness.directory.write("down.yaml", "version: 1\nentries:\n  - url: http://127.0.0.1:1/x\n")
        let result = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--retries", "0"])
        #expect(result.code == 1)
        #expect(result.stderr.contains(": connection: "))
    }

    @Test func credentialsAreDroppedOnACrossOriginRedirect() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let other = try await TestOrigin.start()
        defer { Task { await other.stop() } }
        let bytes = Array("elsewhere\n".utf8)
        other.set("/f/elsewhere", bytes)
        let target = other.url("/f/elsewhere").addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let manifest = harness.manifest([("/goto?to=\(target)", bytes)], extra: "headers:\n  Authorization: Bearer xyz\n")
        let result = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache])
        #expect(result.code == 0)
        #expect(harness.origin.lastHeaders("/goto")?["authorization"] == "Bearer xyz")
        #expect(other.lastHeaders("/f/elsewhere") != nil)
        #expect(other.lastHeaders("/f/elsewhere")?["authorization"] == nil, "credentials stay with their origin")
    }
}
