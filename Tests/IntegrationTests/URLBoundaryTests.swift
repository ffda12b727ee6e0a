import Foundation
import Testing
import WorkerTestSupport

/// Three of the reproductions of the review "URLs as values" (issue 61), fixed where they
/// happen: S3 keys are literal (dot segments included), an AWS region cannot steer a request,
/// and the mirrors map matches a prefix only at a path-segment boundary. Each failed on 3038a51.
@Suite(.hangLimit) struct URLBoundaryTests {
    /// `s3://assets/dots/a/../b.txt` is that key: 3038a51 fetched `dots/b.txt` (libcurl removed the
    /// dot segments) and failed on its hash.
    @Test func anS3KeyWithDotSegmentsIsThatKey() async throws {
        let dotted = Array("the dotted key\n".utf8)
        let moto = try MotoS3(objects: ["assets": ["dots/a/../b.txt": dotted, "dots/b.txt": Array("the other key\n".utf8)]])
        defer { moto.stop() }
        let directory = TemporaryDirectory()
        let manifest = directory.write(
            "m.yaml", "version: 1\nentries:\n  - url: s3://assets/dots/a/../b.txt\n    hash: sha256:\(sha256(dotted))\n")
        let result = try await WorkerBinary.run(
            ["sync", manifest, "--cache-dir", directory.path + "/c", "--retries", "0"],
            environment: moto.environment(moto.user, home: directory.path))
        #expect(result.code == 0, "\(result.stderr)")
        #expect(moto.requests.contains { $0.hasPrefix("GET /assets/dots/a/") }, "\(moto.requests.suffix(3))")
    }

    /// `AWS_REGION='x@127.0.0.1:PORT/#'` sent a signed request (and the session token) to that
    /// port on 3038a51. A region is `[a-z0-9-]+`: anything else is refused before any request.
    @Test func aRegionThatIsNotARegionIsRefusedBeforeAnyRequest() async throws {
        let origin = try await TestOrigin.start()
        defer { Task { await origin.stop() } }
        let directory = TemporaryDirectory()
        let manifest = directory.write("m.yaml", "version: 1\nentries:\n  - url: s3://assets/a.png\n")
        let result = try await WorkerBinary.run(
            ["sync", manifest, "--cache-dir", directory.path + "/c", "--retries", "0"],
            environment: [
                "AWS_REGION": "x@127.0.0.1:\(origin.port)/#", "AWS_ACCESS_KEY_ID": "AKIATEST",
                "AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "token",
                "AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_S3": "", "AWS_PROFILE": "",
                "HOME": directory.path, "AWS_CONFIG_FILE": "", "AWS_SHARED_CREDENTIALS_FILE": "",
            ])
        #expect(result.code == 2, "\(result.code) \(result.stderr)")
        #expect(result.stderr.contains("is not a region"), "\(result.stderr)")
        #expect(origin.totalRequests == 0)
    }

    /// A mirrors map prefix `http://127.0.0.1:4` is no prefix of `http://127.0.0.1:41234/…` (nor
    /// `http://cdn.test` of `http://cdn.test.elsewhere.test/…`): 3038a51 sent such entries, with
    /// the map's mirror credentials, to the mirror.
    @Test func aMirrorsMapPrefixMatchesOnlyAtASegmentBoundary() async throws {
        let origin = try await TestOrigin.start()
        defer { Task { await origin.stop() } }
        let mirror = try await TestOrigin.start()
        defer { Task { await mirror.stop() } }
        let bytes = Array("mirrored\n".utf8)
        mirror.set("/m/f/a.png", bytes)
        let directory = TemporaryDirectory()
        let port = String(origin.port)
        let shortPrefix = "http://127.0.0.1:" + port.dropLast()
        let withUser = mirror.url("/m").replacingOccurrences(of: "http://", with: "http://reader:secret@")
        let manifest = directory.write(
            "m.yaml",
            """
            version: 1
            mirrors:
              "\(shortPrefix)": ["\(withUser)"]
            entries:
              - url: \(origin.url("/f/a.png"))
                hash: sha256:\(sha256(bytes))
            """)
        let result = try await WorkerBinary.run(["sync", manifest, "--cache-dir", directory.path + "/c", "--retries", "0"])
        #expect(result.code == 1, "the origin answers 404 and no mirror applies: \(result.code) \(result.stderr)")
        #expect(mirror.totalRequests == 0, "the mirror got no request (and no credentials)")
        // A prefix that ends at a boundary applies.
        let whole = directory.write(
            "whole.yaml",
            """
            version: 1
            mirrors:
              "\(origin.url(""))": ["\(mirror.url("/m"))"]
            entries:
              - url: \(origin.url("/f/a.png"))
                hash: sha256:\(sha256(bytes))
            """)
        let served = try await WorkerBinary.run(["sync", whole, "--cache-dir", directory.path + "/c", "--retries", "0"])
        #expect(served.code == 0, "\(served.stderr)")
    }

    /// The mirrors map compares where URLs connect, not their text: a prefix written
    /// `http://localhost:PORT/f/` covers the entry `http://user@127.0.0.1:PORT/f/a.png`, and the
    /// mirror is asked for the path below the prefix only (the entry's user info stays behind).
    @Test func aMirrorsMapPrefixCoversEverySpellingOfItsOrigin() async throws {
        let origin = try await TestOrigin.start()
        defer { Task { await origin.stop() } }
        let mirror = try await TestOrigin.start()
        defer { Task { await mirror.stop() } }
        let bytes = Array("mirrored by origin\n".utf8)
        mirror.set("/m/a.png", bytes)
        let directory = TemporaryDirectory()
        let manifest = directory.write(
            "m.yaml",
            """
            version: 1
            mirrors:
              "http://LOCALHOST:\(origin.port)/f/": ["\(mirror.url("/m/"))"]
            entries:
              - url: http://user@127.0.0.1:\(origin.port)/f/a.png
                hash: sha256:\(sha256(bytes))
            """)
        let result = try await WorkerBinary.run(["sync", manifest, "--cache-dir", directory.path + "/c", "--retries", "0"])
        #expect(result.code == 0, "the origin answers 404, the map's mirror serves: \(result.code) \(result.stderr)")
        #expect(origin.hits("/f/a.png") == 1)
        #expect(mirror.hits("/m/a.png") == 1)
    }

    /// `--rewrite http://localhost:PORT/=…` covers every spelling of that origin: 3038a51 sent the
    /// requests of `user@localhost`, a port with a leading zero and the IPv4-mapped loopback to
    /// FROM's host itself.
    @Test func aRewriteCannotBeBypassedByAnotherSpellingOfItsOrigin() async throws {
        let from = try await TestOrigin.start()
        defer { Task { await from.stop() } }
        let to = try await TestOrigin.start()
        defer { Task { await to.stop() } }
        let directory = TemporaryDirectory()
        let port = from.port
        var text = "version: 1\nentries:\n"
        let spellings = [
            "http://user@localhost:\(port)", "http://localhost:0\(port)", "http://[::ffff:127.0.0.1]:\(port)",
            "http://LOCALHOST.:\(port)", "http://127.1:\(port)",
        ]
        for (number, spelling) in spellings.enumerated() {
            let bytes = Array("file \(number)\n".utf8)
            to.set("/inside/f/\(number).png", bytes)
            from.set("/f/\(number).png", bytes)
            text += "  - url: \(spelling)/f/\(number).png\n    hash: sha256:\(sha256(bytes))\n"
        }
        let manifest = directory.write("m.yaml", text)
        let rule = "http://localhost:\(port)/=\(to.url("/inside/"))"
        let result = try await WorkerBinary.run([
            "sync", manifest, "--cache-dir", directory.path + "/c", "--rewrite", rule, "--retries", "0",
        ])
        #expect(result.code == 0, "\(result.stderr)")
        #expect(from.totalRequests == 0, "FROM's host was contacted \(from.totalRequests) times")
        #expect(to.totalRequests == spellings.count)
    }

    /// `--rewrite` covers a bucket's endpoint too (3038a51 accepted such a rule and it did
    /// nothing): the endpoint here refuses every connection, and the rule sends the signed requests
    /// to moto instead — the sync and `manifest s3://` alike.
    @Test func aRewriteSendsABucketsEndpointElsewhere() async throws {
        let bytes = Array("through the proxy\n".utf8)
        let moto = try MotoS3(objects: ["assets": ["a/x.png": bytes]])
        defer { moto.stop() }
        let refusing = RefusingPort()
        defer { refusing.release() }
        let directory = TemporaryDirectory()
        let manifest = directory.write("m.yaml", "version: 1\nentries:\n  - url: s3://assets/a/x.png\n    hash: sha256:\(sha256(bytes))\n")
        var environment = moto.environment(moto.user, home: directory.path)
        environment["AWS_ENDPOINT_URL"] = refusing.origin
        let rule = "\(refusing.origin)/=\(moto.endpoint)/"
        let result = try await WorkerBinary.run(
            ["sync", manifest, "--cache-dir", directory.path + "/c", "--rewrite", rule, "--retries", "0"],
            environment: environment)
        #expect(result.code == 0, "\(result.stderr)")
        let listed = try await WorkerBinary.run(
            [
                "manifest", "s3://assets/a/", "--cache-dir", directory.path + "/c", "--rewrite", rule,
                "--retries", "0",
            ], environment: environment)
        #expect(listed.code == 0 && listed.stdout.contains(sha256(bytes)), "\(listed.stdout) \(listed.stderr)")
    }

    /// The tree path of an `s3://` entry is its key, literal: 3038a51 published `a%20b.png` as
    /// `a b.png` and `x?y.png` as `x` (decoded and cut as if it were an http URL's path).
    @Test func anS3KeyIsItsTreePathAsWritten() async throws {
        let first = Array("percent\n".utf8), second = Array("question\n".utf8)
        let moto = try MotoS3(objects: ["assets": ["p/a%20b.png": first, "p/x?y.png": second]])
        defer { moto.stop() }
        let directory = TemporaryDirectory()
        let manifest = directory.write(
            "m.yaml",
            """
            version: 1
            base_url: s3://assets/p/
            entries:
              - url: "a%20b.png"
                hash: sha256:\(sha256(first))
              - url: s3://assets/p/x?y.png
                hash: sha256:\(sha256(second))
            """)
        let tree = directory.path + "/tree"
        let result = try await WorkerBinary.run(
            ["sync", manifest, "--cache-dir", directory.path + "/c", "--tree", tree, "--retries", "0"],
            environment: moto.environment(moto.user, home: directory.path))
        #expect(result.code == 0, "\(result.stderr)")
        #expect((try? String(contentsOfFile: tree + "/a%20b.png", encoding: .utf8)) == "percent\n")
        #expect((try? String(contentsOfFile: tree + "/p/x?y.png", encoding: .utf8)) == "question\n")
    }

    /// A rule no URL of the run is under is said (a typo in FROM sent 2,000 requests to the public
    /// host with exit 0 on 3038a51), and is in the report.
    @Test func aRuleThatMatchesNothingIsAWarningAndAReportField() async throws {
        let harness = try await Harness.start()
        defer { Task { await harness.origin.stop() } }
        let manifest = harness.manifest([("/f/a.png", harness.serve("a.png"))])
        let report = harness.directory.path + "/r.json"
        let typo = "http://127.0.0.1:\(harness.origin.port)/ff/=http://127.0.0.1:1/"
        let result = try await WorkerBinary.run(["sync", manifest, "--cache-dir", harness.cache, "--rewrite", typo, "--report", report])
        #expect(result.code == 0, "\(result.stderr)")
        #expect(
            result.stderr.contains("--rewrite http://127.0.0.1:\(harness.origin.port)/ff/=…: no URL of this run is under FROM"),
            "\(result.stderr)")
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])
        let rewrite = try #require(document["rewrite"] as? [String: Any])
        #expect(
            rewrite["strict"] as? Bool == false && rewrite["unmatched"] as? [String] == ["http://127.0.0.1:\(harness.origin.port)/ff/"],
            "\(rewrite)")
    }

    /// `--rewrite-strict`: a location no rule covers stops the run before any request (exit 2,
    /// naming it); `--allow-origin` lets that origin through; a redirect to an origin no rule
    /// covers fails its entry; the report says the run was strict.
    @Test func aStrictRewriteRefusesWhatNoRuleCovers() async throws {
        let from = try await TestOrigin.start()
        defer { Task { await from.stop() } }
        let to = try await TestOrigin.start()
        defer { Task { await to.stop() } }
        let other = try await TestOrigin.start()
        defer { Task { await other.stop() } }
        let directory = TemporaryDirectory()
        let a = Array("a\n".utf8), b = Array("b\n".utf8), c = Array("c\n".utf8)
        to.set("/in/f/a.png", a)
        other.set("/f/b.png", b)
        other.set("/f/c.png", c)
        let manifest = directory.write(
            "m.yaml",
            """
            version: 1
            entries:
              - url: \(from.url("/f/a.png"))
                hash: sha256:\(sha256(a))
              - url: \(other.url("/f/b.png"))
                hash: sha256:\(sha256(b))
            """)
        let rule = "\(from.url("/"))=\(to.url("/in/"))"
        let refused = try await WorkerBinary.run([
            "sync", manifest, "--cache-dir", directory.path + "/c", "--rewrite", rule, "--rewrite-strict",
        ])
        #expect(refused.code == 2, "\(refused.code) \(refused.stderr)")
        #expect(refused.stderr.contains("no rule covers \(other.url("/f/b.png"))"), "\(refused.stderr)")
        #expect(from.totalRequests + to.totalRequests + other.totalRequests == 0, "nothing was requested")

        let report = directory.path + "/r.json"
        let allowed = try await WorkerBinary.run(
            [
                "sync", manifest, "--cache-dir", directory.path + "/c", "--rewrite", rule,
                "--allow-origin", other.url(""), "--report", report,
            ],
            environment: ["WORKER_REWRITE_STRICT": "1"])
        #expect(allowed.code == 0, "\(allowed.stderr)")
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])
        #expect((document["rewrite"] as? [String: Any])?["strict"] as? Bool == true)
        #expect(from.totalRequests == 0)

        // TO redirects to an origin no rule covers: that entry fails, nothing is asked of it.
        let redirected = directory.write(
            "redirect.yaml",
            """
            version: 1
            entries:
              - url: \(from.url("/goto?to=") + other.url("/f/c.png"))
                hash: sha256:\(sha256(c))
            """)
        let before = other.totalRequests
        let cut = try await WorkerBinary.run([
            "sync", redirected, "--cache-dir", directory.path + "/c",
            "--rewrite", "\(from.url("/"))=\(to.url("/"))", "--rewrite-strict", "--retries", "0",
        ])
        #expect(cut.code == 1 && cut.stderr.contains("(--rewrite-strict)"), "\(cut.code) \(cut.stderr)")
        #expect(other.totalRequests == before)
    }

    /// `--rewrite-strict` looks at mirrors too — an entry's own and the mirrors map's: one no rule
    /// covers stops the run before any request, so a failing primary cannot send the run to it;
    /// once allowed, it serves when the primary fails.
    @Test func aStrictRewriteLooksAtMirrors() async throws {
        let from = try await TestOrigin.start()
        defer { Task { await from.stop() } }
        let to = try await TestOrigin.start()
        defer { Task { await to.stop() } }
        let mirror = try await TestOrigin.start()
        defer { Task { await mirror.stop() } }
        let directory = TemporaryDirectory()
        let a = Array("a\n".utf8)
        // TO has nothing: the entry is served by its mirror or not at all.
        mirror.set("/m/f/a.png", a)
        let own = directory.write(
            "own.yaml",
            """
            version: 1
            entries:
              - url: \(from.url("/f/a.png"))
                hash: sha256:\(sha256(a))
                mirrors: [\(mirror.url("/m/f/a.png"))]
            """)
        let mapped = directory.write(
            "mapped.yaml",
            """
            version: 1
            mirrors:
              "\(from.url("/"))": "\(mirror.url("/m/"))"
            entries:
              - url: \(from.url("/f/a.png"))
                hash: sha256:\(sha256(a))
            """)
        let strict = ["--rewrite", "\(from.url("/"))=\(to.url("/in/"))", "--rewrite-strict", "--retries", "0"]
        for manifest in [own, mapped] {
            let refused = try await WorkerBinary.run(["sync", manifest, "--cache-dir", directory.path + "/c"] + strict)
            #expect(refused.code == 2, "\(manifest): \(refused.stderr)")
            #expect(refused.stderr.contains("no rule covers \(mirror.url("/m/f/a.png"))"), "\(refused.stderr)")
            #expect(from.totalRequests + to.totalRequests + mirror.totalRequests == 0, "nothing was requested")
        }
        for (number, manifest) in [own, mapped].enumerated() {
            let before = mirror.totalRequests
            let allowed = try await WorkerBinary.run(
                [
                    "sync", manifest, "--cache-dir", directory.path + "/c\(number)", "--allow-origin",
                    mirror.url(""),
                ] + strict)
            #expect(allowed.code == 0, "\(allowed.stderr)")
            #expect(mirror.totalRequests > before, "the mirror served")
        }
        #expect(from.totalRequests == 0)
    }

    /// An origin given up counts the entries that failed on it whatever their URL's spelling: a
    /// bucket's entries against its endpoint, rewritten entries against TO (3038a51 counted them
    /// under the listed URL's origin, which the breaker never saw: 0).
    @Test func aDeadOriginCountsTheEntriesRequestedFromIt() async throws {
        let refusing = RefusingPort()
        defer { refusing.release() }
        let directory = TemporaryDirectory()
        var text = "version: 1\nentries:\n"
        for number in 0..<12 { text += "  - url: s3://assets/k\(number).png\n" }
        for number in 0..<12 { text += "  - url: http://listed.test/f\(number).png\n" }
        let manifest = directory.write("m.yaml", text)
        let report = directory.path + "/r.json"
        let result = try await WorkerBinary.run(
            [
                "sync", manifest, "--cache-dir", directory.path + "/c", "--retries", "0", "--report", report,
                "--rewrite", "http://listed.test/=\(refusing.origin)/",
            ],
            environment: [
                "AWS_ENDPOINT_URL": refusing.origin, "AWS_ACCESS_KEY_ID": "", "AWS_PROFILE": "",
                "HOME": directory.path, "AWS_CONFIG_FILE": "", "AWS_SHARED_CREDENTIALS_FILE": "",
            ])
        #expect(result.code == 1)
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])
        let origins = try #require(document["unreachable_origins"] as? [[String: Any]])
        #expect(origins.count == 1 && origins[0]["failed"] as? Int == 24, "\(origins)")
    }

    /// `--rewrite s3://BUCKET/=…` (3038a51 refused an s3:// FROM): the bucket's keys come from
    /// another bucket (signed) or from an http(s) proxy (unsigned); the cache keeps the listed URLs.
    @Test func anS3RewriteSendsABucketsKeysElsewhere() async throws {
        let bytes = Array("in the backup bucket\n".utf8)
        let moto = try MotoS3(objects: ["backup": ["a/x.png": bytes]])
        defer { moto.stop() }
        let proxy = try await TestOrigin.start()
        defer { Task { await proxy.stop() } }
        let other = Array("behind the proxy\n".utf8)
        proxy.set("/prod/b%20c.png", other)
        let directory = TemporaryDirectory()
        let manifest = directory.write(
            "m.yaml",
            """
            version: 1
            entries:
              - url: s3://prod/avatars/x.png
                hash: sha256:\(sha256(bytes))
              - url: s3://prod/b c.png
                hash: sha256:\(sha256(other))
            """)
        let result = try await WorkerBinary.run(
            [
                "sync", manifest, "--cache-dir", directory.path + "/c", "--retries", "0",
                "--rewrite", "s3://prod/avatars/=s3://backup/a/", "--rewrite", "s3://prod/=\(proxy.url("/prod/"))",
                "--rewrite-strict", "--allow-origin", moto.endpoint,
            ],
            environment: moto.environment(moto.user, home: directory.path))
        #expect(result.code == 0, "\(result.stderr)")
        let asked = try #require(proxy.lastHeaders("/prod/b%20c.png"), "the proxy was asked for the key, percent-encoded")
        #expect(asked["authorization"] == nil && asked["x-amz-content-sha256"] == nil, "the proxy gets no signature")
        let located = try await WorkerBinary.run(["path", "s3://prod/avatars/x.png", "--cache-dir", directory.path + "/c"])
        #expect(located.code == 0, "the cache keeps the listed URL: \(located.stderr)")
    }
}
