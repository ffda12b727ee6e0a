import Foundation
import Testing
import WorkerTestSupport

/// The GitLab CI/CD component (templates/worker-sync.yml) run as GitLab runs it
/// (Tests/tools/run-gitlab-component.py: inputs interpolated, the key job, then the child pipeline
/// it wrote with its cache played against a folder) against a local origin.
@Suite(.hangLimit) struct GitLabComponentTests {
    struct Run {
        let json: [String: Any]
        let log: String
        var keyJob: Int? { json["key_job"] as? Int }
        var childJob: Int? { json["child_job"] as? Int }
        var cacheKey: String? { json["cache_key"] as? String }
        var restored: Bool? { json["restored"] as? Bool }
        var artifacts: [String] { json["artifacts"] as? [String] ?? [] }
    }

    /// One pipeline in `workspace` (a fresh checkout: its cache folder and outputs gone).
    func run(_ directory: TemporaryDirectory, inputs: [String: String] = [:]) async throws -> Run {
        let workspace = directory.path + "/project"
        for leftover in [".worker-cache", "worker-child.yml", "worker-junit.xml", "worker-report.json", "worker-summary.md"] {
            try? FileManager.default.removeItem(atPath: workspace + "/" + leftover)
        }
        var arguments = [
            ActionTests.repository + "/Tests/tools/run-gitlab-component.py",
            ActionTests.repository + "/templates/worker-sync.yml",
            "--workspace", workspace, "--cache-store", directory.path + "/caches",
        ]
        for (name, value) in inputs.sorted(by: { $0.key < $1.key }) { arguments += ["--input", "\(name)=\(value)"] }
        let bin = URL(fileURLWithPath: WorkerBinary.path).deletingLastPathComponent().path
        let result = try await WorkerBinary.run(
            arguments, environment: ["PATH": bin + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")],
            directory: workspace, executable: ActionTests.python, seconds: 300)
        let last = result.stdout.split(separator: "\n").last.map(String.init) ?? ""
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any],
            "the runner printed no result: \(result.stdout)\n\(result.stderr)")
        return Run(json: json, log: result.stderr)
    }

    /// Cold then warm: the child pipeline's cache is keyed by worker's version and the manifests'
    /// fingerprint, the JUnit report and the summary are its artifacts, and the second pipeline
    /// restores the cache and asks the origin for nothing.
    @Test func theChildPipelinesCacheIsKeyedByTheFingerprint() async throws {
        let origin = try await TestOrigin.start()
        defer { Task { await origin.stop() } }
        let directory = TemporaryDirectory()
        let files = (1...3).map { ("g-\($0).txt", Array("gitlab \($0)\n".utf8)) }
        for (name, bytes) in files { origin.set("/f/" + name, bytes) }
        let manifest = directory.write(
            "project/manifests/assets.yaml",
            "version: 1\nname: assets\nentries:\n"
                + files.map { "  - url: \(origin.url("/f/" + $0.0))\n    hash: sha256:\(sha256($0.1))\n" }.joined())
        let fingerprint = try await WorkerBinary.run(["fingerprint", manifest]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let version =
            try await WorkerBinary.run(["--version"]).stdout.split(separator: " ").last.map {
                $0.trimmingCharacters(in: .whitespacesAndNewlines)
            } ?? ""

        let cold = try await run(directory)
        #expect(cold.keyJob == 0, "\(cold.log)")
        #expect(cold.childJob == 0, "\(cold.log)")
        #expect(cold.cacheKey == "worker-\(version)-\(fingerprint)")
        #expect(cold.restored == false)
        #expect(cold.artifacts == ["worker-junit.xml", "worker-report.json", "worker-summary.md"])
        #expect(cold.log.contains("added 3, updated 0"), "\(cold.log)")
        for (name, _) in files { #expect(origin.hits("/f/" + name) == 1) }

        let warm = try await run(directory)
        #expect(warm.childJob == 0, "\(warm.log)")
        #expect(warm.restored == true)
        #expect(warm.log.contains("unchanged 3"), "\(warm.log)")
        for (name, _) in files { #expect(origin.hits("/f/" + name) == 1, "the warm pipeline asked the origin for \(name)") }
    }

    /// A failed entry fails the child's job with exit 1 and its cache is still saved; a manifests
    /// input that matches nothing fails the key job naming the pattern.
    @Test func aFailedEntryFailsTheJobAndKeepsTheCache() async throws {
        let origin = try await TestOrigin.start()
        defer { Task { await origin.stop() } }
        let directory = TemporaryDirectory()
        let good = Array("good\n".utf8)
        origin.set("/f/good.txt", good)
        _ = directory.write(
            "project/assets.yaml",
            "version: 1\nname: assets\nentries:\n"
                + "  - url: \(origin.url("/f/good.txt"))\n    hash: sha256:\(sha256(good))\n"
                + "  - url: \(origin.url("/f/missing.txt"))\n    hash: sha256:\(sha256("never served"))\n")
        let failed = try await run(directory, inputs: ["manifests": "assets.yaml", "args": "--retries 0"])
        #expect(failed.keyJob == 0, "\(failed.log)")
        #expect(failed.childJob == 1, "\(failed.log)")
        #expect(failed.log.contains("some entries failed; the cache keeps what was downloaded"))
        let saved = (try? FileManager.default.contentsOfDirectory(atPath: directory.path + "/caches")) ?? []
        #expect(saved == [(failed.cacheKey ?? "") + ".tar"])
        #expect(failed.artifacts.contains("worker-junit.xml"))
        let junit = try String(contentsOfFile: directory.path + "/project/worker-junit.xml", encoding: .utf8)
        #expect(junit.contains("missing.txt") && junit.contains("<failure"), "\(junit)")

        let nothing = try await run(directory, inputs: ["manifests": "manifests/*.yml"])
        #expect(nothing.keyJob == 1)
        #expect(nothing.childJob == nil)
        #expect(nothing.log.contains("the manifests input: nothing matches 'manifests/*.yml'"), "\(nothing.log)")
    }

    /// A manifest whose name holds spaces and `--version` is one manifest: the key job
    /// fingerprints it and the sync downloads its entry (split on spaces, the sync was `worker
    /// --version`: exit 0, nothing cached).
    @Test func aManifestNameWithSpacesAndADashIsOneArgument() async throws {
        let origin = try await TestOrigin.start()
        defer { Task { await origin.stop() } }
        let directory = TemporaryDirectory()
        let body = Array("named oddly\n".utf8)
        origin.set("/f/odd.txt", body)
        let manifest = directory.write(
            "project/manifests/z --version .yaml",
            "version: 1\nname: odd\nentries:\n"
                + "  - url: \(origin.url("/f/odd.txt"))\n    hash: sha256:\(sha256(body))\n")
        let fingerprint = try await WorkerBinary.run(["fingerprint", manifest]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let run = try await run(directory)
        #expect(run.keyJob == 0, "\(run.log)")
        #expect(run.childJob == 0, "\(run.log)")
        #expect(run.cacheKey?.hasSuffix("-" + fingerprint) == true, "\(run.cacheKey ?? "no key")")
        #expect(run.log.contains("added 1"), "\(run.log)")
        #expect(origin.hits("/f/odd.txt") == 1)
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory.path + "/project/worker-report.json")))
                as? [String: Any])
        #expect((report["totals"] as? [String: Any])?["added"] as? Int == 1)
    }
}
