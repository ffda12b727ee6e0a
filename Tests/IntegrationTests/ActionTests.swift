import Foundation
import Testing
import WorkerTestSupport

/// The GitHub Action (action.yml at the repository's root) run step by step as a runner runs it
/// (Tests/tools/run-action.py: GITHUB_OUTPUT, GITHUB_ENV, GITHUB_PATH, GITHUB_STEP_SUMMARY,
/// RUNNER_TEMP, GITHUB_ACTION_PATH; actions/cache played against a folder) against a local origin.
/// The inputs are those of the README's `uses:` example.
@Suite(.hangLimit) struct ActionTests {
    static let repository: String = {
        var folder = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { folder.deleteLastPathComponent() }
        return folder.path
    }()

    /// The Python of the tests' virtual environment (PyYAML comes with moto).
    static var python: String {
        let moto = ProcessInfo.processInfo.environment["WORKER_MOTO_SERVER"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (ProcessInfo.processInfo.environment["HOME"] ?? "/root") + "/.cache/worker-test-venv/bin/moto_server"
        return URL(fileURLWithPath: moto).deletingLastPathComponent().appendingPathComponent("python3").path
    }

    /// The README's example workflow: the ```yaml block with the step that uses OWNER/worker@REF.
    static func readmeWorkflow() throws -> String {
        let readme = try String(contentsOfFile: repository + "/README.md", encoding: .utf8)
        let blocks = readme.components(separatedBy: "```yaml\n").dropFirst().map { $0.components(separatedBy: "\n```")[0] }
        return try #require(blocks.first { $0.contains("/worker@") && $0.contains("jobs:") },
                            "README.md has no workflow block that uses OWNER/worker@REF")
    }

    /// One job's runner: a workspace (the checkout), RUNNER_TEMP, the summary file, and the cache
    /// store shared by every run of the test (as a repository's caches are).
    struct Runner {
        let directory: TemporaryDirectory
        var workspace: String { directory.path + "/workspace" }
        var store: String { directory.path + "/caches" }
        /// Where an earlier run saved the worker build (the release build takes minutes: the
        /// test's binary stands for it).
        var build: String { directory.path + "/build" }

        init(directory: TemporaryDirectory) throws {
            self.directory = directory
            try FileManager.default.createDirectory(atPath: build, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: WorkerBinary.path, toPath: build + "/worker")
        }

        struct Run {
            let json: [String: Any]
            let log: String
            let summary: String
            let temp: String
            var outputs: [String: String] { json["outputs"] as? [String: String] ?? [:] }
            var failed: Bool { json["failed"] as? Bool ?? true }
            func outcome(_ name: String) -> String? {
                (json["steps"] as? [[String: Any]])?.first { $0["name"] as? String == name }?["outcome"] as? String
            }
        }

        /// A fresh job (new RUNNER_TEMP; the workspace's cache folder gone, as on a new runner).
        func run(_ runID: Int, workflow: String? = nil, inputs: [String: String] = [:]) async throws -> Run {
            let temp = directory.path + "/temp-\(runID)"
            try FileManager.default.createDirectory(atPath: temp, withIntermediateDirectories: true)
            try? FileManager.default.removeItem(atPath: workspace + "/.worker-cache")
            var arguments = [ActionTests.repository + "/Tests/tools/run-action.py", ActionTests.repository,
                             "--workspace", workspace, "--runner-temp", temp, "--cache-store", store,
                             "--summary", temp + "/summary.md", "--run-id", "\(runID)", "--seed", "build-cache=\(build)"]
            if let workflow { arguments += ["--workflow", directory.write("workflow-\(runID).yml", workflow)] }
            for (name, value) in inputs.sorted(by: { $0.key < $1.key }) { arguments += ["--input", "\(name)=\(value)"] }
            let result = try await WorkerBinary.run(arguments, directory: workspace, executable: ActionTests.python, seconds: 300)
            let last = result.stdout.split(separator: "\n").last.map(String.init) ?? ""
            let json = try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any],
                                    "the runner printed no result: \(result.stdout)\n\(result.stderr)")
            let summary = (try? String(contentsOfFile: temp + "/summary.md", encoding: .utf8)) ?? ""
            return Run(json: json, log: result.stderr, summary: summary, temp: temp)
        }

        func savedCaches() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: store)) ?? []).filter { $0.hasPrefix("worker-") }.sorted()
        }
    }

    func manifest(_ origin: TestOrigin, _ files: [(String, [UInt8])]) -> String {
        "version: 1\nname: assets\nentries:\n" + files.map { "  - url: \(origin.url("/f/" + $0.0))\n    hash: sha256:\(sha256($0.1))\n" }.joined()
    }

    /// The README's example, cold then warm: outputs, the job summary, the report, the cache saved
    /// under the fingerprint's key and restored by the next run, which downloads nothing; then a
    /// changed file is the one update.
    @Test func theReadmesExampleSyncsThenRestoresTheCacheWarm() async throws {
        let origin = try await TestOrigin.start()
        defer { Task { await origin.stop() } }
        let directory = TemporaryDirectory()
        let runner = try Runner(directory: directory)
        var files = (1...3).map { ("file-\($0).txt", Array("body \($0)\n".utf8)) }
        for (name, bytes) in files { origin.set("/f/" + name, bytes) }
        let manifestPath = directory.write("workspace/manifests/assets.yaml", manifest(origin, files))
        let workflow = try Self.readmeWorkflow()

        let cold = try await runner.run(1, workflow: workflow)
        #expect(!cold.failed, "\(cold.log)")
        #expect(cold.outputs["added"] == "3")
        #expect(cold.outputs["updated"] == "0")
        #expect(cold.outputs["failed"] == "0")
        #expect(cold.outputs["exit-code"] == "0")
        let fingerprint = try await WorkerBinary.run(["fingerprint", manifestPath])
        #expect(cold.outputs["fingerprint"] == fingerprint.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(cold.summary.contains("worker sync: assets"), "\(cold.summary)")
        #expect(cold.summary.contains("| 3 | 0 | 3 | 0 | 0 | 0 | 0 |"), "\(cold.summary)")
        let reportPath = try #require(cold.outputs["report"])
        let report = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: reportPath))) as? [String: Any])
        #expect((report["totals"] as? [String: Any])?["added"] as? Int == 3)
        let version = try await WorkerBinary.run(["--version"]).stdout.split(separator: " ").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) } ?? ""
        #expect(runner.savedCaches() == ["worker-\(version)-\(cold.outputs["fingerprint"] ?? "")-1-1.tar"])
        for (name, _) in files { #expect(origin.hits("/f/" + name) == 1) }

        let warm = try await runner.run(2, workflow: workflow)
        #expect(!warm.failed, "\(warm.log)")
        #expect(warm.outputs["added"] == "0")
        #expect(warm.outputs["updated"] == "0")
        #expect(warm.summary.contains("| 3 | 3 | 0 | 0 | 0 | 0 | 0 |"), "\(warm.summary)")
        for (name, _) in files { #expect(origin.hits("/f/" + name) == 1, "the warm run asked the origin for \(name)") }
        #expect(warm.log.contains("worker-\(version)-\(cold.outputs["fingerprint"] ?? "")-1-1"), "restored from the first run's save")

        files[1].1 = Array("body 2, changed\n".utf8)
        origin.set("/f/" + files[1].0, files[1].1)
        _ = directory.write("workspace/manifests/assets.yaml", manifest(origin, files))
        let changed = try await runner.run(3, workflow: workflow)
        #expect(!changed.failed, "\(changed.log)")
        #expect(changed.outputs["updated"] == "1")
        #expect(changed.outputs["added"] == "0")
        #expect(changed.outputs["fingerprint"] != cold.outputs["fingerprint"])
        #expect(origin.hits("/f/" + files[0].0) == 1)
        #expect(origin.hits("/f/" + files[1].0) == 2)
    }

    /// A failed entry: the outputs say so, the action fails with worker's exit code 1 in its last
    /// step, and the cache is saved anyway (what was downloaded is kept for the next run).
    @Test func aFailedEntryFailsTheActionButTheCacheIsSaved() async throws {
        let origin = try await TestOrigin.start()
        defer { Task { await origin.stop() } }
        let directory = TemporaryDirectory()
        let runner = try Runner(directory: directory)
        let good = Array("good\n".utf8)
        origin.set("/f/good.txt", good)
        _ = directory.write("workspace/assets.yaml", manifest(origin, [("good.txt", good), ("missing.txt", Array("never served\n".utf8))]))
        let run = try await runner.run(1, inputs: ["manifests": "assets.yaml", "cache-dir": "cache", "args": "--retries 0"])
        #expect(run.failed)
        #expect(run.outputs["added"] == "1")
        #expect(run.outputs["failed"] == "1")
        #expect(run.outputs["exit-code"] == "1")
        #expect(run.outcome("Sync") == "success")
        #expect(run.outcome("Save the cache") == "success")
        #expect(run.outcome("Result") == "failure")
        #expect(runner.savedCaches().count == 1)
        #expect(run.summary.contains("missing.txt"), "\(run.summary)")
        #expect(run.log.contains("::warning::some entries failed"))
    }

    /// `remote-cache`: the shared tier gets what the origin served (handed to worker in its
    /// environment, not on its command line, since the URL may carry a credential).
    @Test func theRemoteCacheInputFillsTheTier() async throws {
        let origin = try await TestOrigin.start()
        defer { Task { await origin.stop() } }
        let tier = try WebDAVTier()
        defer { tier.stop() }
        let directory = TemporaryDirectory()
        let runner = try Runner(directory: directory)
        let body = Array("for the tier\n".utf8)
        origin.set("/f/tier.txt", body)
        _ = directory.write("workspace/manifests/a.yaml", manifest(origin, [("tier.txt", body)]))
        let run = try await runner.run(1, inputs: ["remote-cache": tier.url])
        #expect(!run.failed, "\(run.log)")
        #expect(run.outputs["added"] == "1")
        #expect(tier.objects == [sha256(body)], "\(tier.requests)")
    }

    /// A manifests input that matches nothing stops before worker runs, naming the pattern.
    @Test func aManifestsPatternThatMatchesNothingIsAnError() async throws {
        let directory = TemporaryDirectory()
        let runner = try Runner(directory: directory)
        try FileManager.default.createDirectory(atPath: runner.workspace, withIntermediateDirectories: true)
        let run = try await runner.run(1, inputs: ["manifests": "manifests/*.yml"])
        #expect(run.failed)
        #expect(run.log.contains("::error::the manifests input: nothing matches 'manifests/*.yml'"), "\(run.log)")
        #expect(run.outcome("Sync") == "skipped")
        #expect(runner.savedCaches().isEmpty)
    }

    /// `version`: the release .deb is downloaded, checked against the SHA-256 before anything in it
    /// is used, and unpacked onto the job's PATH; a package with another hash is refused and
    /// nothing runs; a version this action does not list (and no deb-sha256) is refused by name.
    @Test func aReleasedVersionIsInstalledOnlyWhenItsHashMatches() async throws {
        let origin = try await TestOrigin.start()
        defer { Task { await origin.stop() } }
        let directory = TemporaryDirectory()
        let runner = try Runner(directory: directory)
        let arch = try await WorkerBinary.run(["--print-architecture"], executable: "/usr/bin/dpkg").stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let name = "worker_9.9.9_\(arch).deb"
        // A package as scripts/make-deb.sh lays it out, holding the test's binary.
        let stage = directory.path + "/stage"
        try FileManager.default.createDirectory(atPath: stage + "/usr/bin", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: stage + "/DEBIAN", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: WorkerBinary.path, toPath: stage + "/usr/bin/worker")
        _ = directory.write("stage/DEBIAN/control", """
            Package: worker
            Version: 9.9.9
            Architecture: \(arch)
            Maintainer: tests <tests@example.org>
            Depends: libcurl4 (>= 7.80.0), libyaml-0-2, libsqlite3-0, adduser
            Description: test package
             for ActionTests

            """)
        let built = try await WorkerBinary.run(["-Znone", "--build", "--root-owner-group", stage, directory.path + "/" + name],
                                               executable: "/usr/bin/dpkg-deb")
        #expect(built.code == 0, "\(built.stderr)")
        let deb = Array(try Data(contentsOf: URL(fileURLWithPath: directory.path + "/" + name)))
        origin.set("/releases/" + name, deb)
        let body = Array("released\n".utf8)
        origin.set("/f/released.txt", body)
        _ = directory.write("workspace/manifests/a.yaml", manifest(origin, [("released.txt", body)]))
        let url = origin.url("/releases/" + name)

        let tampered = try await runner.run(1, inputs: ["version": "9.9.9", "deb-url": url, "deb-sha256": sha256(body)])
        #expect(tampered.failed)
        #expect(tampered.outcome("Install worker") == "failure")
        #expect(tampered.log.contains("does not have the expected SHA-256"), "\(tampered.log)")
        #expect(!FileManager.default.fileExists(atPath: tampered.temp + "/worker-9.9.9"), "nothing of the refused package is unpacked")
        #expect(tampered.outcome("Sync") == "skipped")

        let unlisted = try await runner.run(2, inputs: ["version": "9.9.9", "deb-url": url])
        #expect(unlisted.failed)
        #expect(unlisted.log.contains("\(name) is not listed in this action's packaging/release-checksums.txt"), "\(unlisted.log)")

        let installed = try await runner.run(3, inputs: ["version": "9.9.9", "deb-url": url, "deb-sha256": sha256(deb)])
        #expect(!installed.failed, "\(installed.log)")
        #expect(installed.outcome("Restore the worker build") == "skipped")
        #expect((installed.json["path"] as? [String]) == [installed.temp + "/worker-9.9.9/usr/bin"])
        #expect(installed.outputs["added"] == "1")
        #expect(installed.outputs["fingerprint"]?.count == 64)
    }
}
