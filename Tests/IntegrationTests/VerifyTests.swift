import Foundation
import Testing
import WorkerTestSupport

/// `worker verify [--repair]` through the binary.
@Suite(.hangLimit) struct VerifyTests {
    @Test func findsAndRepairsEveryKindOfProblem() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let entries = (0..<4).map { ("/f/v\($0)", harness.serve("v\($0)")) }
        _ = try await harness.sync(harness.manifest(entries))
        let clean = try await WorkerBinary.run(["verify", "--cache-dir", harness.cache])
        #expect(clean.code == 0)
        #expect(clean.stdout.contains("worker verify: 4 objects"))
        #expect(clean.stdout.contains("the cache and its index agree"))

        // Corrupt one object, delete another, plant an unreferenced object and a stray symlink.
        let corrupt = harness.objectPath(sha256(entries[0].1))
        chmod(corrupt, 0o644)
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: corrupt))
        unlink(harness.objectPath(sha256(entries[1].1)))
        let orphanBytes = Array("nobody's\n".utf8)
        harness.directory.write("cache/objects/sha256/" + sha256(orphanBytes).prefix(2) + "/" + sha256(orphanBytes), orphanBytes)
        symlink("/etc/passwd", harness.cache + "/objects/sha256/ab/" + String(repeating: "ab", count: 32))
        harness.directory.write("cache/tmp/dl-crashed", "partial")

        let found = try await WorkerBinary.run(["verify", "--cache-dir", harness.cache, "--report", harness.directory.path + "/v.json"])
        #expect(found.code == 1)
        let report = try #require(
            JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: harness.directory.path + "/v.json"))) as? [String: Any])
        #expect(report["corrupt_objects"] as? [String] == [sha256(entries[0].1)])
        #expect((report["missing_objects"] as? [String])?.sorted() == [harness.origin.url("/f/v0"), harness.origin.url("/f/v1")])
        #expect(report["unreferenced_objects"] as? [String] == [sha256(orphanBytes)])
        #expect(report["stray_files"] as? [String] == ["ab/" + String(repeating: "ab", count: 32)])
        #expect(report["temporary_files"] as? Int == 1)
        #expect(found.stdout.contains("run `worker verify --repair` to fix"))

        let before = harness.origin.totalRequests
        let repaired = try await WorkerBinary.run(["verify", "--repair", "--cache-dir", harness.cache])
        #expect(repaired.code == 0)
        #expect(repaired.stdout.contains("downloaded 2 again, dropped 0 entries"))
        #expect(harness.origin.totalRequests - before == 2)
        #expect(try harness.cachedBytes("/f/v0") == entries[0].1)
        #expect(try harness.cachedBytes("/f/v1") == entries[1].1)
        #expect(FileManager.default.fileExists(atPath: "/etc/passwd"), "the symlink was removed, not its target")

        let after = try await WorkerBinary.run(["verify", "--cache-dir", harness.cache])
        #expect(after.code == 0)
        #expect(after.stdout.contains("worker verify: 4 objects"))
    }

    @Test func repairDropsWhatCannotBeFetchedAgain() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let bytes = harness.serve("gone")
        _ = try await harness.sync(harness.manifest([("/f/gone", bytes), ("/f/stays", harness.serve("stays"))]))
        unlink(harness.objectPath(sha256(bytes)))
        harness.origin.set("/f/gone", "different bytes now")
        let repaired = try await WorkerBinary.run(["verify", "--repair", "--cache-dir", harness.cache, "--retries", "0"])
        #expect(repaired.code == 0)
        #expect(repaired.stdout.contains("dropped 1 entries"))
        #expect(try harness.records().map(\.url) == [harness.origin.url("/f/stays")])
        #expect(!harness.objects().contains(sha256("different bytes now")), "a body that fails its hash is not kept")
    }
}
