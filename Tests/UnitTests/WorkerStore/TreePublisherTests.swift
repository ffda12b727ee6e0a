import Foundation
import Testing
import WorkerSupport
import WorkerTestSupport

@testable import WorkerStore

/// The publisher without a sync: what it does when what its caller believed is out of date.
@Suite struct TreePublisherTests {
    @Test func anObjectGoneWhileTheTreeIsBuiltIsReadAgainFromTheTruth() async throws {
        let directory = TemporaryDirectory()
        let kept = directory.write("objects/kept", "kept\n")
        let replacement = directory.write("objects/new", "new\n")
        let believed = [TreeFile(path: "a.txt", source: kept), TreeFile(path: "b.txt", source: directory.path + "/objects/gone")]
        var reads = 0
        let publisher = TreePublisher(path: directory.path + "/site")
        let outcome = try await publisher.publish(
            cacheDirectory: nil, wait: nil, context: RunContext(),
            files: { () throws(CacheError) in believed }
        ) { () throws(CacheError) -> [TreeFile] in
            reads += 1
            return [TreeFile(path: "a.txt", source: kept), TreeFile(path: "b.txt", source: replacement)]
        }
        #expect(reads == 1)
        #expect(outcome.switched && outcome.files == 2 && outcome.linked == 2)
        #expect(try String(contentsOfFile: directory.path + "/site/b.txt", encoding: .utf8) == "new\n")
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path + "/.site.worker").sorted()
        #expect(left == ["lock", outcome.version], "the half-built version is gone")
    }

    @Test func withoutTheTruthAGoneObjectFailsThePublishAndLeavesTheLinkAlone() async throws {
        let directory = TemporaryDirectory()
        let publisher = TreePublisher(path: directory.path + "/site")
        await #expect(throws: CacheError.self) {
            try await publisher.publish(
                cacheDirectory: nil, wait: nil, context: RunContext(),
                files: { () throws(CacheError) in [TreeFile(path: "a.txt", source: directory.path + "/gone")] })
        }
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/site"))
    }
}
