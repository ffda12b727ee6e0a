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
        let moto =
            ProcessInfo.processInfo.environment["WORKER_MOTO_SERVER"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (ProcessInfo.processInfo.environment["HOME"] ?? "/root") + "/.cache/worker-test-venv/bin/moto_server"
        return URL(fileURLWithPath: moto).deletingLastPathComponent().appendingPathComponent("python3").path
    }

    /// The README's example workflow: the ```yaml block with the step that uses OWNER/worker@REF.
    static func readmeWorkflow() throws -> String {
        let readme = try String(contentsOfFile: repository + "/README.md", encoding: .utf8)
        let blocks = readme.components(separatedBy: "```yaml\n").dropFirst().map { $0.components(separatedBy: "\n```")[0] }
        return try #require(
            blocks.first { $0.contains("/worker@") && $0.contains("jobs:") },
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
            /// The programs a step started whose environment held the traced variable.
            func readers(_ name: String) -> [String]? {
                (json["steps"] as? [[String: Any]])?.first { $0["name"] as? String == name }?["readers"] as? [String]
            }
            var stepNames: [String] { (json["steps"] as? [[String: Any]])?.compactMap { $0["name"] as? String } ?? [] }
        }

        /// A fresh job (new RUNNER_TEMP; the workspace's cache folder gone, as on a new runner).
        /// `env`: the step's `env:` (every step of the action inherits it); `traceEnv`: a variable
        /// whose readers each step reports; `seedBuild`: an earlier run saved the worker build;
        /// `action`: the action's folder (default the repository).
        func run(
            _ runID: Int, workflow: String? = nil, inputs: [String: String] = [:], env: [String: String] = [:],
            traceEnv: String? = nil, seedBuild: Bool = true, action: String = ActionTests.repository
        ) async throws -> Run {
            let temp = directory.path + "/temp-\(runID)"
            try FileManager.default.createDirectory(atPath: temp, withIntermediateDirectories: true)
            try? FileManager.default.removeItem(atPath: workspace + "/.worker-cache")
            var arguments = [
                ActionTests.repository + "/Tests/tools/run-action.py", action,
                "--workspace", workspace, "--runner-temp", temp, "--cache-store", store,
                "--summary", temp + "/summary.md", "--run-id", "\(runID)",
            ]
            if seedBuild { arguments += ["--seed", "build-cache=\(build)"] }
            if let traceEnv { arguments += ["--trace-env", traceEnv] }
            if let workflow { arguments += ["--workflow", directory.write("workflow-\(runID).yml", workflow)] }
            for (name, value) in inputs.sorted(by: { $0.key < $1.key }) { arguments += ["--input", "\(name)=\(value)"] }
            for (name, value) in env.sorted(by: { $0.key < $1.key }) { arguments += ["--env", "\(name)=\(value)"] }
            let result = try await WorkerBinary.run(arguments, directory: workspace, executable: ActionTests.python, seconds: 300)
            let last = result.stdout.split(separator: "\n").last.map(String.init) ?? ""
            let json = try #require(
                try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any],
                "the runner printed no result: \(result.stdout)\n\(result.stderr)")
            let summary = (try? String(contentsOfFile: temp + "/summary.md", encoding: .utf8)) ?? ""
            return Run(json: json, log: result.stderr, summary: summary, temp: temp)
        }

        func savedCaches() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: store)) ?? []).filter { $0.hasPrefix("worker-") }.sorted()
        }
    }

    func manifest(_ origin: TestOrigin, _ files: [(String, [UInt8])]) -> String {
        "version: 1\nname: assets\nentries:\n"
            + files.map { "  - url: \(origin.url("/f/" + $0.0))\n    hash: sha256:\(sha256($0.1))\n" }.joined()
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
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: reportPath))) as? [String: Any])
        #expect((report["totals"] as? [String: Any])?["added"] as? Int == 3)
        let version =
            try await WorkerBinary.run(["--version"]).stdout.split(separator: " ").last.map {
                $0.trimmingCharacters(in: .whitespacesAndNewlines)
            } ?? ""
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
        _ = directory.write(
            "stage/DEBIAN/control",
            """
            Package: worker
            Version: 9.9.9
            Architecture: \(arch)
            Maintainer: tests <tests@example.org>
            Depends: libcurl4 (>= 7.80.0), libyaml-0-2, libsqlite3-0, adduser
            Description: test package
             for ActionTests

            """)
        let built = try await WorkerBinary.run(
            ["-Znone", "--build", "--root-owner-group", stage, directory.path + "/" + name],
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

    /// The step's `env:` (a CDN token, say) is inherited by every step of a composite action. Each
    /// step runs under strace here and lists the programs whose environment held a planted
    /// variable: in the build, install and key steps only the launcher that clears it before
    /// anything runs (scripts/action/clean-env.sh, and the `env -i` it execs); worker sync in the
    /// sync, whose token it is.
    /// Once with the build restored from its cache, once built from source (a stand-in `swift`).
    @Test func theStepsSecretsReachOnlyTheSync() async throws {
        let origin = try await TestOrigin.start()
        defer { Task { await origin.stop() } }
        let directory = TemporaryDirectory()
        let runner = try Runner(directory: directory)
        let body = Array("secret-free\n".utf8)
        origin.set("/f/a.txt", body)
        _ = directory.write("workspace/manifests/a.yaml", manifest(origin, [("a.txt", body)]))
        // A `swift` that builds nothing: its bin path holds the test's binary.
        let fake = directory.path + "/fake-swift"
        _ = directory.write(
            "fake-swift/swift",
            """
            #!/bin/sh
            case " $* " in *" --show-bin-path "*) echo "\(runner.build)" ;; *" --version "*) echo "Swift version 6.3.1" ;; esac

            """)
        chmod(fake + "/swift", 0o755)
        let path = fake + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let planted = "WORKER_TEST_PLANTED_SECRET"
        for (number, restored) in [(1, true), (2, false)] {
            let run = try await runner.run(
                number, env: [planted: "s3cr3t-\(number)", "PATH": path], traceEnv: planted,
                seedBuild: restored)
            #expect(!run.failed, "\(run.log)")
            for step in ["Prepare the worker build", "Install worker", "Cache key"] {
                let readers = try #require(run.readers(step), "no trace of \(step): \(run.stepNames)")
                #expect(!readers.isEmpty, "the trace of \(step) saw not even its launcher")
                #expect(
                    readers.allSatisfy { $0 == "env -i" || $0.hasPrefix("bash ") && $0.hasSuffix("/scripts/action/clean-env.sh") },
                    "\(step) let these read the step's env: \(readers)")
            }
            let sync = try #require(run.readers("Sync"))
            #expect(sync.contains("worker sync"), "\(sync)")
            #expect(run.readers("Result")?.isEmpty == true)
            if !restored {
                #expect(run.log.contains("building worker from the action's source"), "\(run.log)")
            }
        }
    }

    /// A `report` input holding a newline cannot add an output: each is written in the delimiter
    /// form, so `added` is the sync's count, not the 99999 the input carried.
    @Test func aReportInputHoldingANewlineAddsNoOutput() async throws {
        let origin = try await TestOrigin.start()
        defer { Task { await origin.stop() } }
        let directory = TemporaryDirectory()
        let runner = try Runner(directory: directory)
        let body = Array("one\n".utf8)
        origin.set("/f/one.txt", body)
        _ = directory.write("workspace/manifests/a.yaml", manifest(origin, [("one.txt", body)]))
        let run = try await runner.run(1, inputs: ["report": "r.json\nadded=99999"])
        #expect(!run.failed, "\(run.log)")
        #expect(run.outputs["added"] == "1")
        #expect(run.outputs["report"]?.hasSuffix("/r.json\nadded=99999") == true, "\(run.outputs)")
        #expect(origin.hits("/f/one.txt") == 1)
    }

    /// Ten runs with nothing changed save the cache once (each save is a new entry in the
    /// repository's 10 GB); a change saves it again.
    @Test func tenUnchangedRunsSaveTheCacheOnce() async throws {
        let origin = try await TestOrigin.start()
        defer { Task { await origin.stop() } }
        let directory = TemporaryDirectory()
        let runner = try Runner(directory: directory)
        var files = (1...2).map { ("s-\($0).txt", Array("saved \($0)\n".utf8)) }
        for (name, bytes) in files { origin.set("/f/" + name, bytes) }
        _ = directory.write("workspace/manifests/a.yaml", manifest(origin, files))
        for number in 1...10 {
            let run = try await runner.run(number)
            #expect(!run.failed, "\(run.log)")
            #expect(run.outcome("Save the cache") == (number == 1 ? "success" : "skipped"), "run \(number)")
        }
        #expect(runner.savedCaches().count == 1, "\(runner.savedCaches())")
        for (name, _) in files { #expect(origin.hits("/f/" + name) == 1) }

        files[0].1 = Array("saved 1, changed\n".utf8)
        origin.set("/f/" + files[0].0, files[0].1)
        _ = directory.write("workspace/manifests/a.yaml", manifest(origin, files))
        let changed = try await runner.run(11)
        #expect(changed.outputs["updated"] == "1")
        #expect(runner.savedCaches().count == 2, "\(runner.savedCaches())")
        let again = try await runner.run(12)
        #expect(again.outputs["updated"] == "0")
        #expect(again.outcome("Save the cache") == "skipped")
        #expect(runner.savedCaches().count == 2)
    }

    /// A cache restored by a restore-keys prefix — another key's save, whose bytes another ref's
    /// run may have got — serves only what these manifests pin by hash: an entry without a hash is
    /// downloaded again (the tree gets the origin's bytes, not the planted ones) and the rows
    /// these manifests do not name are dropped. The cache this run saves under its own key is
    /// then trusted: the next run asks for nothing.
    @Test func aCacheFromAnotherKeyServesOnlyWhatIsPinned() async throws {
        let origin = try await TestOrigin.start()
        defer { Task { await origin.stop() } }
        let directory = TemporaryDirectory()
        let runner = try Runner(directory: directory)
        let planted = Array("planted by another ref's run\n".utf8)
        let other = Array("only the other manifests name this\n".utf8)
        origin.set("/f/u.txt", planted)
        origin.set("/f/o.txt", other)
        _ = directory.write(
            "workspace/m1.yaml",
            "version: 1\nname: m1\nentries:\n"
                + "  - url: \(origin.url("/f/u.txt"))\n    path: u.txt\n"
                + "  - url: \(origin.url("/f/o.txt"))\n    hash: sha256:\(sha256(other))\n    path: o.txt\n")
        let first = try await runner.run(1, inputs: ["manifests": "m1.yaml", "tree": "site"])
        #expect(!first.failed, "\(first.log)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: runner.workspace + "/site/u.txt")) == Data(planted))

        let real = Array("the origin's own bytes\n".utf8)
        let pinned = Array("pinned\n".utf8)
        origin.set("/f/u.txt", real)
        origin.set("/f/p.txt", pinned)
        _ = directory.write(
            "workspace/m2.yaml",
            "version: 1\nname: m2\nentries:\n"
                + "  - url: \(origin.url("/f/u.txt"))\n    path: u.txt\n"
                + "  - url: \(origin.url("/f/p.txt"))\n    hash: sha256:\(sha256(pinned))\n    path: p.txt\n")
        let second = try await runner.run(2, inputs: ["manifests": "m2.yaml", "tree": "site"])
        #expect(!second.failed, "\(second.log)")
        #expect(second.log.contains("the cache was restored from worker-"), "\(second.log)")
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: runner.workspace + "/site/u.txt")) == Data(real),
            "the tree served the bytes another key's cache held")
        #expect(origin.hits("/f/u.txt") == 2)
        let dropped = try await WorkerBinary.run(["path", origin.url("/f/o.txt"), "--cache-dir", runner.workspace + "/.worker-cache"])
        #expect(dropped.code == 1, "a row these manifests do not name still serves: \(dropped.stdout)")
        #expect(second.outcome("Save the cache") == "success")

        let third = try await runner.run(3, inputs: ["manifests": "m2.yaml", "tree": "site"])
        #expect(!third.failed, "\(third.log)")
        #expect(!third.log.contains("the cache was restored from worker-"))
        #expect(origin.hits("/f/u.txt") == 2, "its own key's cache is trusted")
        #expect(third.outcome("Save the cache") == "skipped")
    }
}
