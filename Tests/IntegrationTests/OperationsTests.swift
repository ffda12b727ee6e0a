import Foundation
import Testing
import WorkerSupport
import WorkerTestSupport

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// Reports for CI and ops, the failure budget, shards, progress and logs, through the binary.
@Suite(.hangLimit) struct OperationsTests {
    /// A cache with one unchanged, one updated, one added and one failed entry.
    func scenario() async throws -> (Harness, String, [UInt8], [UInt8]) {
        let harness = try await Harness.start()
        let keep = harness.serve("keep.png", "keep")
        let old = harness.serve("change.png", "old version")
        _ = try await harness.sync(harness.manifest([("/f/keep.png", keep), ("/f/change.png", old)]))
        let new = harness.serve("change.png", "new version")
        let added = harness.serve("added.png", "added")
        let manifest = harness.manifest(
            [("/f/keep.png", keep), ("/f/change.png", new), ("/f/added.png", added), ("/status/500", nil)],
            name: "ops.yaml")
        return (harness, manifest, old, new)
    }

    /// Element names and attributes of an XML document, in order.
    final class XMLCollector: NSObject, XMLParserDelegate {
        var elements: [(name: String, attributes: [String: String])] = []
        func parser(
            _ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
            attributes: [String: String] = [:]
        ) {
            elements.append((name, attributes))
        }
    }

    @Test func junitHasOneTestCasePerEntryAndAFailureElement() async throws {
        let (harness, manifest, _, _) = try await scenario()
        defer { Task { await harness.origin.stop() } }
        let path = harness.directory.path + "/junit.xml"
        let result = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--junit", path, "--retries", "0"])
        #expect(result.code == 1)
        let parser = try #require(XMLParser(contentsOf: URL(fileURLWithPath: path)))
        let collector = XMLCollector()
        parser.delegate = collector
        #expect(parser.parse(), "well-formed XML")
        let cases = collector.elements.filter { $0.name == "testcase" }
        #expect(cases.count == 4)
        #expect(
            Set(cases.compactMap { $0.attributes["name"] })
                == Set(["/f/keep.png", "/f/change.png", "/f/added.png", "/status/500"].map(harness.origin.url)))
        let suite = try #require(collector.elements.first { $0.name == "testsuite" })
        #expect(suite.attributes["name"] == "test" && suite.attributes["tests"] == "4" && suite.attributes["failures"] == "1")
        let failure = try #require(collector.elements.first { $0.name == "failure" })
        #expect(failure.attributes["type"] == "http_status")
        #expect(failure.attributes["message"] == "HTTP 500")
    }

    @Test func markdownSummaryToAFileOrToTheGitHubStepSummary() async throws {
        let (harness, manifest, _, _) = try await scenario()
        defer { Task { await harness.origin.stop() } }
        let path = harness.directory.path + "/summary.md"
        let run57 = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--summary-md", path, "--retries", "0"])
        #expect(run57.code == 1, "one entry fails (HTTP 500): \(run57.code) \(run57.stderr)")
        let summary = try String(contentsOfFile: path, encoding: .utf8)
        #expect(summary.contains("### ❌ worker sync: test\n"))
        #expect(summary.contains("| 4 | 1 | 1 | 1 | 0 | 1 | 0 |"))
        #expect(summary.contains("| \(harness.origin.url("/status/500")) | `http_status` | HTTP 500 |"))

        let github = harness.directory.write("step-summary.md", "earlier step\n")
        let run64 = try await WorkerBinary.run(
            ["sync", manifest, "--cache-dir", harness.cache, "--retries", "0"],
            environment: ["GITHUB_STEP_SUMMARY": github])
        #expect(run64.code == 1, "one entry fails (HTTP 500): \(run64.code) \(run64.stderr)")
        let appended = try String(contentsOfFile: github, encoding: .utf8)
        #expect(appended.hasPrefix("earlier step\n### ❌ worker sync"), "appended, as GitHub expects")
    }

    @Test func prometheusMetricsParseAndCarryTheTotals() async throws {
        let (harness, manifest, _, _) = try await scenario()
        defer { Task { await harness.origin.stop() } }
        let path = harness.directory.path + "/worker.prom"
        let run74 = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--metrics", path, "--retries", "0"])
        #expect(run74.code == 1, "one entry fails (HTTP 500): \(run74.code) \(run74.stderr)")
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var samples: [String: Double] = [:]
        let sample = try Regex(#"^([a-z_]+)\{manifests="[^"]*"(?:,status="([a-z]+)")?\} (-?[0-9.e+]+)$"#)
        #expect(text.contains("worker_build_info{manifests=\"test\",version=\"\(WorkerVersion.current)\"} 1"), "the version")
        for line in text.split(separator: "\n") where !line.hasPrefix("#") && !line.hasPrefix("worker_build_info") {
            let match = try #require(try sample.wholeMatch(in: String(line)), "not a Prometheus sample: \(line)")
            let name = String(match.output[1].substring!) + (match.output[2].substring.map { "." + $0 } ?? "")
            samples[name] = Double(match.output[3].substring!)
        }
        #expect(samples["worker_sync_success"] == 0)
        #expect(samples["worker_sync_entries.failed"] == 1)
        #expect(samples["worker_sync_entries.updated"] == 1)
        #expect(samples["worker_sync_entries.unchanged"] == 1)
        #expect(samples["worker_sync_bytes_downloaded"] == Double("new version".utf8.count + "added".utf8.count))
        #expect(try #require(samples["worker_sync_last_run_timestamp_seconds"]) > Date().timeIntervalSince1970 - 60)
        #expect(text.contains("# TYPE worker_sync_entries gauge"))
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: harness.directory.path).allSatisfy { !$0.hasSuffix(".tmp") },
            "written by way of a temporary file, nothing left behind")
    }

    @Test func htmlReportShowsThumbnailsOldAndNewAndFailures() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let png = { (color: UInt8) -> [UInt8] in [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, color] }
        harness.origin.set("/f/a.png", png(1))
        _ = try await harness.sync(harness.manifest([("/f/a.png", png(1))]))
        harness.origin.set("/f/a.png", png(2))
        harness.origin.set("/f/b.png", png(3))
        let manifest = harness.manifest([("/f/a.png", png(2)), ("/f/b.png", png(3)), ("/status/404", nil)])
        let path = harness.directory.path + "/report.html"
        let run105 = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--report-html", path])
        #expect(run105.code == 1, "the 404 entry fails: \(run105.code) \(run105.stderr)")
        let html = try String(contentsOfFile: path, encoding: .utf8)
        func data(_ bytes: [UInt8]) -> String { "data:image/png;base64," + Data(bytes).base64EncodedString() }
        #expect(html.hasPrefix("<!DOCTYPE html>"))
        #expect(html.contains("<h2>Updated <small>1</small></h2>"))
        #expect(html.contains(data(png(1))) && html.contains(data(png(2))), "old and new side by side")
        #expect(html.range(of: data(png(1)))!.lowerBound < html.range(of: data(png(2)))!.lowerBound, "old first")
        #expect(html.contains("<h2>Added <small>1</small></h2>") && html.contains(data(png(3))))
        #expect(html.contains("<h2>Failed <small>1</small></h2>") && html.contains("<b>http_status</b> HTTP 404"))
        #expect(!html.contains("<script"), "no script")
        #expect(!html.contains("src=\"http"), "self-contained: no external resource")
        // Parsed: the page is well-formed, with a section per kind and a card per entry.
        let parser = XMLParser(data: Data(html.utf8))
        let collector = XMLCollector()
        parser.delegate = collector
        #expect(parser.parse(), "well-formed (X)HTML: \(parser.parserError.map { "\($0)" } ?? "")")
        #expect(collector.elements.filter { $0.name == "section" }.count == 3)
        #expect(collector.elements.filter { $0.name == "article" }.count == 3)
        let images = collector.elements.filter { $0.name == "img" }.compactMap { $0.attributes["src"] }
        #expect(images == [data(png(1)), data(png(2)), data(png(3))], "before, after, added; the failed entry has no version")
    }

    @Test func failureBudgetDecidesTheExitCode() async throws {
        let (harness, manifest, _, _) = try await scenario()
        defer { Task { await harness.origin.stop() } }
        func code(_ budget: String) async throws -> Int32 {
            try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--max-failures", budget, "--retries", "0", "-q"])
                .code
        }
        #expect(try await code("0") == 1)
        #expect(try await code("1") == 0)
        #expect(try await code("25%") == 0, "1 of 4 entries")
        #expect(try await code("10%") == 1)
        #expect(try await WorkerBinary.run(["sync", manifest, "--max-failures", "lots"]).code == 2)
    }

    @Test func shardsSplitAManifestAcrossWorkersSharingOneCache() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let keys = (0..<60).map { "s\($0)" }
        let manifest = harness.manifest(keys.map { ("/gen/\($0)", TestOrigin.generated($0)) })
        var handled = 0
        for index in 0..<3 {
            let environment = index == 2 ? ["JOB_COMPLETION_INDEX": "2", "JOB_COMPLETION_COUNT": "3"] : [:]
            let arguments =
                ["sync", manifest, "--cache-dir", harness.cache, "--report", harness.directory.path + "/r\(index).json"]
                + (index == 2 ? [] : ["--shard", "\(index)/3"])
            let result = try await WorkerBinary.run(arguments, environment: environment)
            #expect(result.code == 0)
            let report = try #require(
                JSONSerialization.jsonObject(
                    with: Data(contentsOf: URL(fileURLWithPath: harness.directory.path + "/r\(index).json"))) as? [String: Any])
            handled += (report["totals"] as? [String: Any])?["added"] as? Int ?? 0
        }
        #expect(handled == 60, "the shards cover every entry once")
        #expect(harness.origin.totalRequests == 60)
        #expect(try harness.records().count == 60)
        let missing = try await WorkerBinary.run(
            ["sync", manifest, "--cache-dir", harness.cache], environment: ["JOB_COMPLETION_INDEX": "1"])
        #expect(missing.code == 2)
        #expect(missing.stderr.contains("JOB_COMPLETION_COUNT"))
    }

    @Test func fingerprintPrintsOnlyTheDigest() async throws {
        let result = try await WorkerBinary.run(["fingerprint", CommandLineTests.demoManifest])
        #expect(result.code == 0)
        #expect(result.stdout.range(of: "^[0-9a-f]{64}\n$", options: .regularExpression) != nil)
        #expect(try await WorkerBinary.run(["fingerprint", CommandLineTests.demoManifest]).stdout == result.stdout)
    }

    @Test func progressLinesWithoutATerminalAndJSONLogs() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let manifest = harness.manifest([("/f/p", harness.serve("p")), ("/status/503", nil)])
        let shown = try await WorkerBinary.run([
            "sync", manifest, "--cache-dir", harness.cache, "--progress", "always", "--retries", "1",
            "-v", "--log-format", "json",
        ])
        #expect(shown.code == 1, "one entry fails: \(shown.stderr)")
        // With --log-format json every stderr line is a JSON object: progress and failures too.
        let lines = shown.stderr.split(separator: "\n")
        #expect(!lines.isEmpty)
        var messages: [String] = []
        for line in lines {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
            #expect(object["level"] != nil && object["message"] != nil && object["time"] != nil)
            messages.append(object["message"] as? String ?? "")
        }
        #expect(messages.filter { $0.hasPrefix("progress: ") }.last?.hasPrefix("progress: 2/2 entries") == true)
        #expect(messages.contains { $0.hasPrefix("failed: ") && $0.contains("HTTP 503") })
        let plain = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--progress", "always", "--retries", "0"])
        #expect(plain.code == 1)
        #expect(
            plain.stderr.split(separator: "\n").filter { $0.hasPrefix("progress: ") }.last?.hasPrefix("progress: 1/1 entries") == true,
            "\(plain.stderr)")
        let quiet = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--progress", "never"])
        #expect(quiet.code == 1 && !quiet.stderr.isEmpty, "the failure is still said: \(quiet.stderr)")
        #expect(!quiet.stderr.contains("progress:"))
    }

    @Test func aTerminalGetsOneLiveProgressLine() async throws {
        // `script` (util-linux) gives the binary a pseudo-terminal, as a person at a shell would.
        let directory = TemporaryDirectory()
        let command = "\(WorkerBinary.path) sync \(CommandLineTests.demoManifest) --cache-dir \(directory.path)/cache"
        let result = try await WorkerBinary.run(["-qfec", command, "/dev/null"], executable: "/usr/bin/script")
        #expect(result.code == 0)
        #expect(result.stdout.contains("\r\u{1B}[2K1/6 entries"), "redrawn in place")
        #expect(result.stdout.contains("\r\u{1B}[2K6/6 entries"))
        #expect(!result.stdout.contains("progress: "), "not the plain lines meant for logs")
    }
}
