import Foundation
import Testing
import WorkerTestSupport

/// Runners that share a tier visit the entries in an order of their own, so that machines started
/// together rarely miss where another is about to upload; without a tier, manifest order.
@Suite(.hangLimit) struct TierOrderTests {
    @Test func eachRunWithATierVisitsTheEntriesInAnOrderOfItsOwn() async throws {
        let files = Dictionary(uniqueKeysWithValues: (0..<60).map { (String(format: "/o/%02d.bin", $0), Array("body \($0)".utf8)) })
        let origin = try NginxServer(
            prepare: { root in
                try FileManager.default.createDirectory(atPath: root + "/www/o", withIntermediateDirectories: true)
                for (name, bytes) in files { try Data(bytes).write(to: URL(fileURLWithPath: root + "/www" + name)) }
            }, server: { port, root in "listen 127.0.0.1:\(port);\nroot \(root)/www;" })
        defer { origin.stop() }
        let tier = try WebDAVTier()
        defer { tier.stop() }
        let directory = TemporaryDirectory()
        var text = "version: 1\nentries:\n"
        let names = files.keys.sorted()
        for name in names {
            text += "  - url: http://127.0.0.1:\(origin.port)\(name)\n    hash: sha256:\(sha256(files[name]!))\n"
        }
        let path = directory.write("m.yaml", text)
        // One request at a time: the origin's log is the order the run visited the entries in.
        func visit(_ run: Int, tier tierArguments: [String]) async throws -> [String] {
            let before = origin.requests.count
            let result = try await WorkerBinary.run(
                ["sync", path, "--cache-dir", directory.path + "/cache\(run)", "--jobs", "1"]
                    + tierArguments)
            #expect(result.code == 0, "\(result.stderr)")
            return origin.requests.dropFirst(before).map(\.path)
        }
        let readOnly = ["--remote-cache", tier.url, "--remote-cache-read-only"]
        let first = try await visit(1, tier: readOnly)
        let second = try await visit(2, tier: readOnly)
        #expect(first.count == 60 && second.count == 60)
        #expect(Set(first) == Set(names) && Set(second) == Set(names))
        #expect(first != second, "two runs on one tier walked the entries in the same order")
        #expect(first != names || second != names, "a run with a tier walked the manifest's order")
        let plain = try await visit(3, tier: [])
        #expect(plain == names, "without a tier the entries go in manifest order")
    }
}
