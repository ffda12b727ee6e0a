import Foundation
import Testing
import WorkerKinds
import WorkerTestSupport

@testable import WorkerManifest

@Suite(.hangLimit) struct ManifestReaderTests {
    /// The schemes a refusal lists are the registered kinds'.
    init() { Kinds.install() }

    // MARK: - Valid manifests

    @Test func readsEveryFieldOfTheFixture() throws {
        let path = try #require(Bundle.module.path(forResource: "full", ofType: "yaml", inDirectory: "Fixtures"))
        let set = try ManifestLoader(environment: ["WORKER_TEST_TOKEN": "s3cret"]).load(paths: [path])
        let manifest = try #require(set.manifests.first)
        #expect(manifest.name == "avatars")
        #expect(manifest.baseURL == "https://cdn.example.com/assets/")
        #expect(
            manifest.headers == [
                RequestHeader(name: "Authorization", value: "Bearer s3cret"),
                RequestHeader(name: "X-Client", value: "worker-tests"),
            ])
        #expect(
            set.entries.map(\.url) == [
                "https://cdn.example.com/assets/u/1/avatar.png",
                "https://other.example.com/u/2.png",
                "https://cdn.example.com/root/3.png",
                "http://cdn.example.com/u/4.png",
            ])
        #expect(set.entries[0].hash?.description == "sha256:" + sha256OfTest)
        #expect(set.entries[1].hash?.algorithm == .md5)
        #expect(set.entries[2].hash == nil)
        #expect(set.entries[3].hash?.hex == sha256OfTest)
        #expect(set.entries[0].line == 9 && set.entries[0].column == 10)
        #expect(manifest.entryCount == 4)
    }

    @Test func nameDefaultsToTheFileName() throws {
        let set = try load("version: 1\nentries: []\n", name: "thumbs.yaml").get()
        #expect(set.manifests[0].name == "thumbs")
        #expect(set.entries.isEmpty)
    }

    @Test func baseURLMayComeAfterTheEntries() throws {
        let set = try load(
            """
            version: 1
            entries:
              - url: a.png
            base_url: http://127.0.0.1:9/x/
            """
        ).get()
        #expect(set.entries.map(\.url) == ["http://127.0.0.1:9/x/a.png"])
    }

    @Test func sameURLWithTheSameHashIsMerged() throws {
        let set = try load(
            """
            version: 1
            entries:
              - url: http://h/a
                hash: md5:098f6bcd4621d373cade4e832627b4f6
              - url: http://h/a
                hash: 098F6BCD4621D373CADE4E832627B4F6
              - url: http://h/a
            """
        ).get()
        #expect(set.entries.count == 1)
        #expect(set.manifests[0].entryCount == 3)
    }

    @Test func localEntriesResolveInsideTheManifestFolder() throws {
        let directory = TemporaryDirectory()
        let set = try load("version: 1\nentries:\n  - url: img/./a.png\n  - url: img/sub/../b%20c.png\n", in: directory).get()
        #expect(set.entries.map(\.url) == ["file://\(directory.path)/img/a.png", "file://\(directory.path)/img/b c.png"])
    }

    // MARK: - Errors with their positions

    @Test func yamlSyntaxErrorHasItsPosition() {
        let found = problems("version: 1\nentries:\n  - url: [unclosed\n")
        #expect(
            found == [
                "3:10: 'url' must be a string, found a list",
                "4:1: YAML syntax error: did not find expected ',' or ']' (while parsing a flow sequence at line 3)",
            ])
    }

    @Test func unknownKeys() {
        #expect(
            problems("version: 1\nentries: []\ncolour: red\n") == [
                "3:1: unknown key 'colour' (expected version, name, base_url, serial, expires, headers, mirrors, entries)"
            ])
        #expect(
            problems("version: 1\nentries:\n  - url: http://h/a\n    sha: x\n") == [
                "4:5: unknown key 'sha' in entry (expected url, hash, path, mirrors)"
            ])
    }

    @Test func duplicateKeys() {
        #expect(problems("version: 1\nversion: 1\nentries: []\n") == ["2:1: duplicate key 'version' (first at line 1)"])
        #expect(
            problems("version: 1\nentries:\n  - url: http://h/a\n    url: http://h/b\n") == ["4:5: duplicate key 'url' (first at line 3)"])
    }

    @Test func aliasesAndAnchorsAreRefused() {
        let found = problems(
            """
            version: 1
            entries:
              - &one
                url: http://h/a
              - *one
            """)
        #expect(found == ["3:5: YAML anchors are not allowed in a manifest", "5:5: YAML aliases are not allowed in a manifest"])
    }

    @Test func wrongTypes() {
        #expect(problems("version: \"1\"\nentries: []\n") == ["1:10: 'version' must be the integer 1, found a scalar"])
        #expect(problems("version: 2\nentries: []\n") == ["1:10: unsupported manifest version 2 (this worker reads version 1)"])
        #expect(problems("version: 1\nentries: {}\n") == ["2:10: 'entries' must be a list, found a mapping"])
        #expect(
            problems("version: 1\nentries:\n  - http://h/a\n") == [
                "3:5: each entry must be a mapping with 'url' (and optional 'hash', 'path' and 'mirrors'), found a scalar"
            ])
        #expect(problems("version: 1\nentries:\n  - url: [a]\n") == ["3:10: 'url' must be a string, found a list"])
        #expect(problems("- 1\n") == ["1:1: the manifest must be a mapping with 'version' and 'entries', found a list"])
    }

    @Test func missingParts() {
        #expect(problems("version: 1\nentries:\n  - hash: 098f6bcd4621d373cade4e832627b4f6\n") == ["3:5: entry has no 'url'"])
        #expect(problems("entries: []\n") == ["1:1: missing required key 'version'"])
        #expect(problems("version: 1\n") == ["1:1: missing required key 'entries'"])
        #expect(problems("") == ["1:1: manifest is empty (expected a mapping with 'version' and 'entries')"])
    }

    @Test func badHash() {
        #expect(
            problems("version: 1\nentries:\n  - url: http://h/a\n    hash: sha256:abc\n") == [
                "4:11: bad hash: sha256 hash needs 64 hex digits, got 3"
            ])
    }

    @Test func badScheme() {
        #expect(
            problems("version: 1\nentries:\n  - url: ftp://h/a\n") == [
                "3:10: URL scheme 'ftp' is not allowed (only http, https, s3, oci and sftp)"
            ])
        #expect(
            problems("version: 1\nentries:\n  - url: file:///etc/passwd\n") == [
                "3:10: URL scheme 'file' is not allowed (only http, https, s3, oci and sftp)"
            ])
        #expect(
            problems("version: 1\nbase_url: ftp://h/\nentries: []\n") == [
                "2:11: 'base_url' has scheme 'ftp'; only http, https, s3 and sftp are allowed"
            ])
    }

    @Test func relativeURLsThatDoNotResolveToHTTPAreRefused() {
        // Found by the mutation fuzzer: Foundation returned these unresolved.
        #expect(
            problems("version: 1\nbase_url: https://h/a/\nentries:\n  - url: \":u/1.png\"\n") == [
                "4:10: not a valid relative URL: :u/1.png"
            ])
        #expect(
            problems("version: 1\nbase_url: https://h/a/\nentries:\n  - url: \":https:/~/x\"\n") == [
                "4:10: not a valid relative URL: :https:/~/x"
            ])
    }

    @Test func sameURLWithTwoHashesNamesBothLines() {
        #expect(
            problems(
                """
                version: 1
                entries:
                  - url: http://h/a
                    hash: md5:098f6bcd4621d373cade4e832627b4f6
                  - url: http://h/b
                  - url: http://h/a
                    hash: md5:00000000000000000000000000000000
                """) == ["6:10: URL http://h/a is listed with two hashes: md5:000000000000… here, md5:098f6bcd4621… at line 3"])
    }

    /// Each entry is recorded when the next one is read: the last entry, and one repeated at once,
    /// are still compared with what came before.
    @Test func sameURLTwiceInARowAndAtTheEnd() throws {
        #expect(
            problems(
                """
                version: 1
                entries:
                  - url: http://h/a
                    hash: md5:098f6bcd4621d373cade4e832627b4f6
                  - url: http://h/a
                    hash: md5:00000000000000000000000000000000
                """) == ["5:10: URL http://h/a is listed with two hashes: md5:000000000000… here, md5:098f6bcd4621… at line 3"])
        let set = try load(
            """
            version: 1
            entries:
              - url: http://h/a
              - url: http://h/b
              - url: http://h/a
                hash: md5:098f6bcd4621d373cade4e832627b4f6
            """
        ).get()
        #expect(set.entries.map(\.url) == ["http://h/a", "http://h/b"])
        #expect(set.entries.first?.hash?.description == "md5:098f6bcd4621d373cade4e832627b4f6", "a later hash fills in")
    }

    @Test func sameURLWithTwoHashesAcrossManifests() throws {
        let directory = TemporaryDirectory()
        let first = directory.write("a.yaml", "version: 1\nentries:\n  - url: http://h/x\n    hash: md5:098f6bcd4621d373cade4e832627b4f6\n")
        let second = directory.write(
            "b.yaml", "version: 1\nentries:\n  - url: http://h/x\n    hash: md5:00000000000000000000000000000000\n")
        let error = try #require(throws: ManifestErrors.self) { try ManifestLoader().load(paths: [first, second]) }
        #expect(
            error.description
                == "\(second):3:10: URL http://h/x is listed with two hashes: md5:000000000000… here, md5:098f6bcd4621… at \(first):3")
    }

    @Test func missingVariableIsNamedNotItsValue() {
        let found = problems("version: 1\nheaders:\n  Authorization: \"Bearer ${NOPE_TOKEN}\"\nentries: []\n")
        #expect(found == ["3:18: header 'Authorization': environment variable 'NOPE_TOKEN' is not set"])
    }

    @Test func localPathsMayNotLeaveTheFolder() {
        #expect(
            problems("version: 1\nentries:\n  - url: ../secret.png\n") == ["3:10: local path '../secret.png' leaves the manifest's folder"])
        #expect(
            problems("version: 1\nentries:\n  - url: a/%2e%2e/%2e%2e/x\n") == [
                "3:10: local path 'a/%2e%2e/%2e%2e/x' leaves the manifest's folder"
            ])
        #expect(
            problems("version: 1\nentries:\n  - url: /etc/passwd\n") == [
                "3:10: local path '/etc/passwd' must be relative to the manifest's folder (no base_url is set)"
            ])
    }

    @Test func onlyOneDocument() {
        #expect(problems("version: 1\nentries: []\n---\nversion: 1\n") == ["3:1: a manifest holds one YAML document; found a second one"])
    }

    @Test func everyProblemIsReportedNotJustTheFirst() {
        let found = problems("version: 1\nentries:\n  - url: ftp://a\n  - url: http://h/b\n    hash: nope\n  - {}\n")
        #expect(found.count == 3)
    }

    @Test func missingFileIsAnError() throws {
        let error = try #require(throws: ManifestErrors.self) { try ManifestLoader().load(paths: ["/nonexistent/m.yaml"]) }
        #expect(error.description == "/nonexistent/m.yaml: cannot read manifest: No such file or directory")
        #expect(error.diagnostics.map(\.kind) == [.unreadable])
    }

    @Test func diagnosticsSayTheirKind() throws {
        let directory = TemporaryDirectory()
        let broken = directory.write("broken.yaml", "version: 1\nentries:\n  - url: [unclosed\n")
        let wrong = directory.write("wrong.yaml", "version: 2\nentries: []\n")
        let error = try #require(throws: ManifestErrors.self) { try ManifestLoader().load(paths: [broken, wrong]) }
        #expect(error.diagnostics.map(\.kind) == [.content, .syntax, .content])
    }

    // MARK: - Streaming

    @Test func streamsOneHundredThousandEntries() throws {
        let directory = TemporaryDirectory()
        var text = "version: 1\nentries:\n"
        text.reserveCapacity(100_000 * 110)
        for number in 0..<100_000 {
            text += "  - url: http://127.0.0.1/u/\(number).png\n    hash: sha256:\(String(format: "%064x", number))\n"
        }
        // A syntax error after the last entry: the entries were handed over one at a time as they
        // were read, before the reader reached the end of the document.
        text += "oops: [\n"
        let path = directory.write("big.yaml", text)
        var delivered = 0
        var last: RawEntry?
        var diagnostics: [ManifestDiagnostic] = []
        _ = ManifestReader(path: path).read(diagnostics: &diagnostics) { entry, _ in
            delivered += 1
            last = entry
        }
        #expect(delivered == 100_000)
        #expect(last?.url == "http://127.0.0.1/u/99999.png")
        #expect(last?.line == 200_001)
        #expect(diagnostics.map(\.line) == [200_003, 200_004])
        #expect(diagnostics.last?.message.hasPrefix("YAML syntax error") == true)
    }

    // MARK: - The parsing thread

    /// Reads `text` with and without the parsing thread: entries as `line:column url hash`, then
    /// problems as `line:column message`.
    private func readBothWays(
        _ text: String, maxDiagnostics: Int = 50, name: String = "m.yaml"
    )
        -> (threaded: [String], inline: [String])
    {
        let directory = TemporaryDirectory()
        let path = directory.write(name, text)
        func read(threadedFromBytes: Int) -> [String] {
            var reader = ManifestReader(path: path)
            reader.threadedFromBytes = threadedFromBytes
            reader.maxDiagnostics = maxDiagnostics
            var seen: [String] = []
            var diagnostics: [ManifestDiagnostic] = []
            _ = reader.read(diagnostics: &diagnostics) { entry, _ in
                seen.append("\(entry.line):\(entry.column) \(entry.url) \(entry.hash?.description ?? "-")")
            }
            return seen + diagnostics.map { "\($0.line):\($0.column) \($0.message)" }
        }
        return (read(threadedFromBytes: 0), read(threadedFromBytes: .max))
    }

    @Test func theParsingThreadGivesTheSameEntriesAndProblems() {
        // Many batches of events, with problems between them, and each way a read can end:
        // the document's end, a syntax error, an alias, too many problems.
        var body = "version: 1\nentries:\n"
        for number in 0..<5_000 {
            body += "  - url: http://127.0.0.1/u/\(number).png\n"
            if number % 7 == 0 { body += "    hash: sha256:\(String(format: "%064x", number))\n" }
            if number % 1_000 == 999 { body += "    colour: red\n" }
            if number == 2_500 { body += "  - url: [list]\n  - {}\n  - plain\n" }
        }
        let texts = [
            body,
            body + "oops: [\n",
            body + "  - url: &anchor http://h/a\n  - *anchor\n  - url: http://h/after\n",
            "version: 1\nentries:\n" + String(repeating: "  - sha: x\n", count: 3_000),
            "",
            "version: 1\nentries: []\n",
            "version: 1\nentries:\n  - url: 'http://h/ünïcödé'\n    hash: \"sha256:\(String(repeating: "ab", count: 32))\"\n",
        ]
        for text in texts {
            let (threaded, inline) = readBothWays(text)
            #expect(threaded == inline)
        }
        // 4,995 entries (five carry an unknown key) and eight problems, the last on line 2 + 5,000
        // entries + 715 hashes + 4 earlier unknown keys + 3 bad entries + 1.
        let first = readBothWays(texts[0]).threaded
        #expect(first.count == 4_995 + 8)
        #expect(first.last == "5725:5 unknown key 'colour' in entry (expected url, hash, path, mirrors)")
    }

    /// This process's open files whose path ends with `suffix`.
    private func openFiles(ending suffix: String) -> [String] {
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return descriptors.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0) }
            .filter { $0.hasSuffix(suffix) }
    }

    @Test func aReaderThatStopsEarlyStopsTheParsingThread() {
        // Three problems end the read within the first batch; the thread, well ahead, is told to
        // stop and waited for (a hang here would fail the test by its time limit).
        let text = "version: 1\nentries:\n" + String(repeating: "  - sha: x\n", count: 200_000)
        let name = "stops-early-\(UUID().uuidString).yaml"
        let (threaded, inline) = readBothWays(text, maxDiagnostics: 3, name: name)
        #expect(threaded == inline)
        #expect(openFiles(ending: "/" + name).isEmpty, "the thread has ended and closed the file")
        #expect(
            threaded == [
                "3:5 unknown key 'sha' in entry (expected url, hash, path, mirrors)",
                "3:5 entry has no 'url'",
                "4:5 unknown key 'sha' in entry (expected url, hash, path, mirrors)",
            ])
    }
}
