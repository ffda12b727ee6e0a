import Foundation
import Glibc
import Synchronization
import Testing
import WorkerTestSupport

/// The promises a manifest's source never changes, through the binary, as one matrix: every
/// source of a signed manifest (a local file, http on nginx, `s3://` on moto, and an `oci://`
/// artifact a signed local manifest names, on Debian's docker-registry) × every output that
/// publishes a tree (`--tree`, `--tree --tree-complete`, `export --atomic`) × every fault (a change
/// while a reader polls the tree, the source down past `--manifest-max-age`, an expired manifest
/// then re-signed, Ctrl-C mid-run, a change while the files' origin — the registry, for an
/// artifact — is down and the manifest's mirror serves). A new source or output is one case of its enum and meets every
/// fault. The promises: the tree is only ever the version before or the complete new one (never
/// empty, never a file missing), a run that cannot read its manifest leaves the tree as it was and
/// still writes its report with the error, and an expiry ends when the publisher signs anew. Every
/// run is strict: the manifest lists its files under a name nothing listens at (port 1), which
/// `--rewrite` sends to their origin, and `--rewrite-strict` allows only the manifest's source and
/// the mirror — a request that skips the rules fails its cell. And a secret the manifest's headers
/// carry (from the environment, named with `--manifest-env` for a remote manifest) reaches no
/// server: the rule sends the files to another origin, where a manifest's headers never go.
@Suite(.hangLimit, .serialized) struct ManifestPromiseMatrixTests {
    enum Source: String, CaseIterable, Sendable { case local, http, s3, oci }
    enum Output: String, CaseIterable, Sendable { case tree, treeComplete, exportAtomic }
    enum Fault: String, CaseIterable, Sendable { case change, sourceDown, expiredThenResigned, interrupt, originDownWithMirror }

    struct Cell: Sendable, CustomTestStringConvertible {
        let source: Source
        let output: Output
        let fault: Fault
        var testDescription: String { "\(source.rawValue) × \(output.rawValue) × \(fault.rawValue)" }
    }

    static let cells: [Cell] = Source.allCases.flatMap { source in
        Output.allCases.flatMap { output in Fault.allCases.map { Cell(source: source, output: output, fault: $0) } }
    }

    @Test(arguments: cells) func aManifestsSourceKeepsEveryPromise(_ cell: Cell) async throws {
        let fleet = try await Fleet(source: cell.source, mirrored: cell.fault == .originDownWithMirror)
        defer { fleet.stop() }
        let expiry = Date(timeIntervalSinceNow: 15)
        try await fleet.publish(version: 1, serial: 1, expiresAt: cell.fault == .expiredThenResigned ? expiry : nil)
        let first = try await fleet.publishOutput(cell.output)
        #expect(first.code == 0, "\(first.stdout) \(first.stderr)")
        #expect(fleet.tree() == fleet.contents(version: 1), "the first version is published")

        switch cell.fault {
        case .change:
            try await fleet.publish(version: 2, serial: 2)
            let poller = TreePoller(fleet)
            let changed = try await fleet.publishOutput(cell.output)
            let problems = await poller.finish()
            #expect(changed.code == 0, "\(changed.stdout) \(changed.stderr)")
            #expect(fleet.tree() == fleet.contents(version: 2))
            #expect(poller.reads > 0, "the reader polled while the tree changed")
            #expect(problems.isEmpty, "a reader saw neither the old nor the new version: \(problems.prefix(5))")

        case .sourceDown:
            let link = fleet.treeLink()
            fleet.takeSourceDown()
            try await Task.sleep(nanoseconds: 1_200_000_000)
            let down = try await fleet.publishOutput(cell.output, extra: ["--manifest-max-age", "1s", "--report", fleet.report])
            #expect(down.code == (cell.source == .local ? 2 : 3), "\(down.stdout) \(down.stderr)")
            #expect(fleet.treeLink() == link, "nothing was published")
            #expect(fleet.tree() == fleet.contents(version: 1))
            let report = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: fleet.report))) as? [String: Any]
            #expect((report?["error"] as? String)?.isEmpty == false, "the report says why: \(String(describing: report))")

        case .expiredThenResigned:
            try await Task.sleep(nanoseconds: UInt64(max(0, expiry.timeIntervalSinceNow + 1.1) * 1e9))
            let expired = try await fleet.publishOutput(cell.output)
            #expect(expired.code == 2, "\(expired.stdout) \(expired.stderr)")
            #expect(expired.stderr.contains("expired at"), "\(expired.stderr)")
            #expect(fleet.tree() == fleet.contents(version: 1), "an expired manifest publishes nothing")
            try await fleet.publish(version: 2, serial: 2, expiresAt: Date(timeIntervalSinceNow: 86_400))
            let resigned = try await fleet.publishOutput(cell.output)
            #expect(resigned.code == 0, "the publisher signed a newer one: \(resigned.stdout) \(resigned.stderr)")
            #expect(fleet.tree() == fleet.contents(version: 2))

        case .interrupt:
            try await fleet.publish(version: 2, serial: 2)
            let poller = TreePoller(fleet)
            let interrupted = try await fleet.publishOutput(cell.output, extra: ["--limit-rate", "8K"], interruptAfter: 1.5)
            let problems = await poller.finish()
            #expect(interrupted.code != 0, "the run was stopped: \(interrupted.stdout) \(interrupted.stderr)")
            #expect(problems.isEmpty, "a reader saw neither the old nor the new version: \(problems.prefix(5))")
            let tree = fleet.tree()
            #expect(tree == fleet.contents(version: 1) || tree == fleet.contents(version: 2), "one complete version: \(tree)")
            let again = try await fleet.publishOutput(cell.output)
            #expect(again.code == 0, "\(again.stdout) \(again.stderr)")
            #expect(fleet.tree() == fleet.contents(version: 2))

        case .originDownWithMirror:
            try await fleet.publish(version: 2, serial: 2)
            fleet.takeOriginDown()
            let poller = TreePoller(fleet)
            let changed = try await fleet.publishOutput(cell.output, extra: ["--report", fleet.report])
            let problems = await poller.finish()
            #expect(changed.code == 0, "\(changed.stdout) \(changed.stderr)")
            #expect(fleet.tree() == fleet.contents(version: 2), "the mirror served the change whole")
            #expect(problems.isEmpty, "a reader saw neither the old nor the new version: \(problems.prefix(5))")
        }
        #expect(fleet.secretsSeen().isEmpty, "the manifest's secret reached a server: \(fleet.secretsSeen().prefix(3))")
    }

    // MARK: - A fleet: a publisher, its source, one machine's cache and tree

    final class Fleet {
        static let files = 12
        let source: Source
        let directory = TemporaryDirectory()
        let origin: NginxServer
        let manifestServer: NginxServer?
        let moto: MotoS3?
        let registry: OCIRegistry?
        /// The manifest's mirror of the files' origin (nginx on the same folder; a registry on the
        /// same storage), when the fault needs one.
        let mirrorOrigin: NginxServer?
        let mirrorRegistry: OCIRegistry?

        var cache: String { directory.path + "/cache" }
        var treePath: String { directory.path + "/tree" }
        var report: String { directory.path + "/report.json" }
        var key: String { directory.path + "/key" }
        /// What the manifest lists its files under: nothing listens there; `--rewrite` sends them on.
        var listedAt: String { source == .oci ? "oci://127.0.0.1:1/" : "http://127.0.0.1:1/" }
        static let secret = "fleet-s3cr3t-value"

        init(source: Source, mirrored: Bool = false) async throws {
            self.source = source
            let www = directory.path + "/www"
            try FileManager.default.createDirectory(atPath: www, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: directory.path + "/src", withIntermediateDirectories: true)
            origin = try NginxServer(http: Self.secretLog, server: { port, root in Self.secretServer(port, root, www) })
            let src = directory.path + "/src"
            manifestServer =
                source == .http ? try NginxServer(http: Self.secretLog, server: { port, root in Self.secretServer(port, root, src) }) : nil
            moto = source == .s3 ? try MotoS3(objects: ["fleet": ["readme": Array("fleet\n".utf8)]]) : nil
            registry = source == .oci ? try OCIRegistry(storage: directory.path + "/registry") : nil
            mirrorOrigin =
                mirrored && source != .oci
                ? try NginxServer(http: Self.secretLog, server: { port, root in Self.secretServer(port, root, www) }) : nil
            mirrorRegistry = mirrored && source == .oci ? try OCIRegistry(storage: directory.path + "/registry") : nil
            let made = try await WorkerBinary.run(["-G", "-W", "-p", key + ".pub", "-s", key + ".sec"], executable: "/usr/bin/minisign")
            #expect(made.code == 0, "\(made.stderr)")
        }

        func stop() {
            origin.stop()
            manifestServer?.stop()
            moto?.stop()
            registry?.stop()
            mirrorOrigin?.stop()
            mirrorRegistry?.stop()
        }

        /// nginx logging each request's `X-Fleet-Secret` header.
        static let secretLog = "log_format secret '$request_uri [$http_x_fleet_secret]';"

        static func secretServer(_ port: Int, _ root: String, _ folder: String) -> String {
            "listen 127.0.0.1:\(port);\naccess_log \(root)/logs/secret.log secret;\nroot \(folder);"
        }

        /// The requests an nginx of the fleet saw with the manifest's secret in their header.
        func secretsSeen() -> [String] {
            [origin, manifestServer, mirrorOrigin].compactMap { $0 }.flatMap { server in
                ((try? String(contentsOfFile: server.directory.path + "/logs/secret.log", encoding: .utf8)) ?? "")
                    .split(separator: "\n").filter { $0.contains(Self.secret) }.map(String.init)
            }
        }

        /// The rules of every run: the files' listed name to their origin, strict, and the
        /// origins a strict run may reach besides (the manifest's source, the mirror).
        var rules: [String] {
            var rules = [
                "--rewrite-strict", "--rewrite",
                listedAt + "=" + (registry.map { "oci://\($0.address)/" } ?? "http://127.0.0.1:\(origin.port)/"),
            ]
            if let manifestServer { rules += ["--allow-origin", "http://127.0.0.1:\(manifestServer.port)"] }
            if let moto { rules += ["--allow-origin", moto.endpoint] }
            if let mirrorOrigin { rules += ["--allow-origin", "http://127.0.0.1:\(mirrorOrigin.port)"] }
            if let mirrorRegistry {
                rules += ["--allow-origin", "https://\(mirrorRegistry.address)", "--allow-origin", "http://\(mirrorRegistry.address)"]
            }
            return rules + (source == .http || source == .s3 ? ["--manifest-env", "FLEET_SECRET"] : [])
        }

        /// The files' origin stops (the registry, for an artifact); the manifest stays.
        func takeOriginDown() {
            if let registry { registry.stop() } else { origin.stop() }
        }

        /// The manifest as a sync names it.
        var argument: String {
            switch source {
            case .local, .oci: directory.path + "/src/fleet.yaml"
            case .http: "http://127.0.0.1:\(manifestServer!.port)/fleet.yaml"
            case .s3: "s3://fleet/m/fleet.yaml"
            }
        }

        var environment: [String: String] {
            (moto.map { $0.environment($0.user, home: directory.path) } ?? [:]).merging(["FLEET_SECRET": Self.secret]) { first, _ in first }
        }

        func contents(version: Int) -> [String: String] {
            Dictionary(uniqueKeysWithValues: (0..<Self.files).map { ("f\($0).txt", Self.text(file: $0, version: version)) })
        }

        static func text(file: Int, version: Int) -> String {
            "file \(file), version \(version)\n" + String(repeating: "\(version)", count: 8000) + "\n"
        }

        /// Serves version `version`'s files and a manifest of them, signed, at the source.
        func publish(version: Int, serial: Int, expiresAt: Date? = nil) async throws {
            // A new second: moto answers a conditional request by If-Modified-Since alone (304 to a
            // new object of the same second), and nginx's ETag is the size and the second.
            if version > 1 { try await Task.sleep(nanoseconds: 1_100_000_000) }
            // Each version a size of its own: nginx's ETag is the size and the second of the mtime,
            // and a version of the same size written within the second would be answered 304.
            var yaml =
                "# \(String(repeating: "v", count: version))\nversion: 1\nname: fleet\nserial: \(serial)\n"
                + "headers:\n  X-Fleet-Secret: \"${FLEET_SECRET}\"\n"
            if let expiresAt { yaml += "expires: \"\(expiresAt.formatted(Date.ISO8601FormatStyle()))\"\n" }
            if let mirrorOrigin { yaml += "mirrors:\n  \"\(listedAt)\": \"http://127.0.0.1:\(mirrorOrigin.port)/\"\n" }
            if let mirrorRegistry { yaml += "mirrors:\n  \"\(listedAt)\": \"oci://\(mirrorRegistry.address)/\"\n" }
            yaml += "entries:\n"
            if let registry {
                // The files are an artifact's layers; the signed manifest names its tag.
                var layers: [String: [UInt8]] = [:]
                for file in 0..<Self.files { layers["f\(file).txt"] = Array(Self.text(file: file, version: version).utf8) }
                try registry.pushArtifact("fleet/files", tag: "current", files: layers)
                yaml += "  - url: \(listedAt)fleet/files:current\n    path: art\n"
            }
            for file in 0..<Self.files where registry == nil {
                let text = Self.text(file: file, version: version)
                directory.write("www/v\(version)/f\(file).txt", text)
                yaml +=
                    "  - url: \(listedAt)v\(version)/f\(file).txt\n    hash: sha256:\(sha256(text))\n"
                    + "    path: f\(file).txt\n"
            }
            // Signed under the name it is served as (minisign's trusted comment names the file).
            let staged = directory.write("staging/fleet.yaml", yaml)
            try? FileManager.default.removeItem(atPath: staged + ".minisig")
            let signed = try await WorkerBinary.run(["-S", "-s", key + ".sec", "-m", staged], executable: "/usr/bin/minisign")
            #expect(signed.code == 0, "\(signed.stderr)")
            let signature = try [UInt8](Data(contentsOf: URL(fileURLWithPath: staged + ".minisig")))
            switch source {
            case .local, .http, .oci:
                directory.write("src/fleet.yaml.minisig", signature)
                directory.write("src/fleet.yaml", yaml)
            case .s3:
                try moto!.put("fleet", "m/fleet.yaml.minisig", signature, sha256: false)
                try moto!.put("fleet", "m/fleet.yaml", Array(yaml.utf8), sha256: false)
            }
        }

        func takeSourceDown() {
            switch source {
            case .local: try? FileManager.default.removeItem(atPath: argument)
            case .http: manifestServer?.stop()
            case .s3: moto?.stop()
            case .oci: registry?.stop()
            }
        }

        /// Runs the output under test: a sync that publishes the tree, or a sync then `export --atomic`.
        func publishOutput(_ output: Output, extra: [String] = [], interruptAfter: Double? = nil) async throws -> WorkerBinary.Result {
            let common = ["--cache-dir", cache, "--trusted-keys", key + ".pub"]
            var sync = ["sync", argument, "--progress", "never"] + common + rules + extra
            switch output {
            case .tree: sync += ["--tree", treePath]
            case .treeComplete: sync += ["--tree", treePath, "--tree-complete"]
            case .exportAtomic: break
            }
            let synced = try await run(sync, interruptAfter: interruptAfter)
            guard output == .exportAtomic, synced.code == 0 else { return synced }
            return try await run(["export", "--layout", "tree", "--atomic", treePath, argument] + common + rules, interruptAfter: nil)
        }

        private func run(_ arguments: [String], interruptAfter: Double?) async throws -> WorkerBinary.Result {
            guard let interruptAfter else { return try await WorkerBinary.run(arguments, environment: environment) }
            // Ctrl-C as a terminal sends it: SIGINT to the running worker (with job control on, as
            // without it bash starts a background job with SIGINT ignored).
            let script = "set -m; \"$0\" \"$@\" & pid=$!; sleep \(interruptAfter); kill -INT $pid; wait $pid"
            return try await WorkerBinary.run(
                ["-c", script, WorkerBinary.path] + arguments, environment: environment,
                executable: "/bin/bash")
        }

        /// Where a reader finds the files: the tree, or the artifact's folder in it.
        var filesPath: String { treePath + (source == .oci ? "/art" : "") }

        /// The tree's files as a reader sees them through the published link.
        func tree() -> [String: String] {
            var files: [String: String] = [:]
            for name in (try? FileManager.default.contentsOfDirectory(atPath: filesPath)) ?? [] {
                files[name] = try? String(contentsOfFile: filesPath + "/" + name, encoding: .utf8)
            }
            return files
        }

        func treeLink() -> String? { try? FileManager.default.destinationOfSymbolicLink(atPath: treePath) }
    }

    /// A reader that reads every file of the tree again and again while a run changes it, and
    /// notes each read that was neither the old nor the new version of that file (a missing file
    /// included).
    final class TreePoller: Sendable {
        private final class State: Sendable {
            let value = Mutex<(stop: Bool, reads: Int, problems: [String])>((false, 0, []))
        }
        private let state = State()
        private let task: Task<Void, Never>

        var reads: Int { state.value.withLock { $0.reads } }

        init(_ fleet: Fleet) {
            let old = fleet.contents(version: 1)
            let new = fleet.contents(version: 2)
            let path = fleet.filesPath
            let state = state
            task = Task.detached {
                while !state.value.withLock({ $0.stop }) {
                    for name in old.keys.sorted() {
                        let read = try? String(contentsOfFile: path + "/" + name, encoding: .utf8)
                        state.value.withLock { state in
                            state.reads += 1
                            if read != old[name], read != new[name] {
                                state.problems.append("\(name): \(read.map { String($0.prefix(24)) } ?? "missing")")
                            }
                        }
                    }
                }
            }
        }

        func finish() async -> [String] {
            state.value.withLock { $0.stop = true }
            await task.value
            return state.value.withLock { $0.problems }
        }
    }
}
