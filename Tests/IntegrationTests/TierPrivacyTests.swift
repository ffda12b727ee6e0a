import Foundation
import Testing
import WorkerTestSupport

/// Privacy is decided by the location that delivered the bytes (signed, user info, that origin's
/// headers) and kept in the index, for `sync`'s uploads and for `push`; uploads that meet a busy
/// tier are tried once more, a 423 on a content-addressed PUT means another client stores it, and
/// each failed upload says why (issue 59, items 7 and 8; each failed on 3038a51).
@Suite(.hangLimit) struct TierPrivacyTests {
    private func remote(_ report: String) throws -> [String: Any] {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])
        return try #require(object["remote_cache"] as? [String: Any])
    }

    /// Objects fetched from a bucket with AWS signing are private: 3038a51 indexed them as public
    /// and `push` uploaded them.
    @Test func pushKeepsSignedBucketObjectsLocal() async throws {
        let objects: [String: [UInt8]] = ["avatars/1.png": Array("first\n".utf8), "avatars/2.png": Array("second\n".utf8)]
        let moto = try MotoS3(objects: ["assets": objects])
        defer { moto.stop() }
        let tier = try WebDAVTier()
        defer { tier.stop() }
        let directory = TemporaryDirectory()
        var text = "version: 1\nentries:\n"
        for (key, bytes) in objects.sorted(by: { $0.key < $1.key }) {
            text += "  - url: s3://assets/\(key)\n    hash: sha256:\(sha256(bytes))\n"
        }
        let manifest = directory.write("m.yaml", text)
        let cache = directory.path + "/c"
        let synced = try await WorkerBinary.run(
            ["sync", manifest, "--cache-dir", cache],
            environment: moto.environment(moto.user, home: directory.path))
        #expect(synced.code == 0, "\(synced.stderr)")
        let push = try await WorkerBinary.run(["push", "--cache-dir", cache, "--remote-cache", tier.url, "--progress", "never"])
        #expect(push.code == 0, "\(push.stdout) \(push.stderr)")
        #expect(push.stdout.contains("2 private (fetched with credentials) kept local"), "\(push.stdout)")
        #expect(tier.objects.isEmpty, "\(tier.objects)")
    }

    /// A body a mirror delivered is as private as that mirror: one with user info in its URL, or
    /// an `s3://` mirror (signed), is not uploaded by `sync` (3038a51 judged by the entry's URL,
    /// which had no credentials, and uploaded both); a public mirror's body is.
    @Test func aBodyFromAMirrorWithCredentialsStaysOffTheTier() async throws {
        let signedBytes = Array("from the bucket\n".utf8)
        let moto = try MotoS3(objects: ["assets": ["m/signed.png": signedBytes]])
        defer { moto.stop() }
        let tier = try WebDAVTier()
        defer { tier.stop() }
        let origin = try await TestOrigin.start()
        let directory = TemporaryDirectory()
        let withUser = Array("behind user info\n".utf8), open = Array("public mirror\n".utf8)
        origin.set("/mirror/user.png", withUser)
        origin.set("/mirror/open.png", open)
        let userMirror = origin.url("/mirror/user.png").replacingOccurrences(of: "http://", with: "http://reader:secret@")
        let manifest = directory.write(
            "m.yaml",
            """
            version: 1
            entries:
              - url: \(origin.url("/gone/user.png"))
                hash: sha256:\(sha256(withUser))
                mirrors: ["\(userMirror)"]
              - url: \(origin.url("/gone/signed.png"))
                hash: sha256:\(sha256(signedBytes))
                mirrors: ["s3://assets/m/signed.png"]
              - url: \(origin.url("/gone/open.png"))
                hash: sha256:\(sha256(open))
                mirrors: ["\(origin.url("/mirror/open.png"))"]
            """)
        let report = directory.path + "/r.json"
        let run = try await WorkerBinary.run(
            [
                "sync", manifest, "--cache-dir", directory.path + "/c", "--remote-cache", tier.url,
                "--report", report, "--retries", "0",
            ],
            environment: moto.environment(moto.user, home: directory.path))
        #expect(run.code == 0, "\(run.stderr)")
        let counts = try remote(report)
        #expect(counts["private_not_uploaded"] as? Int == 2 && counts["uploads"] as? Int == 1, "\(counts)")
        #expect(tier.objects == [sha256(open)], "\(tier.objects)")
        // push agrees with the index.
        let push = try await WorkerBinary.run([
            "push", "--cache-dir", directory.path + "/c", "--remote-cache", tier.url,
            "--progress", "never",
        ])
        #expect(push.code == 0 && push.stdout.contains("2 private"), "\(push.stdout) \(push.stderr)")
        #expect(tier.objects == [sha256(open)], "\(tier.objects)")
        await origin.stop()
    }

    // MARK: - Uploads that meet a busy server

    private static func answer(_ status: String) -> RawOrigin.Answer {
        RawOrigin.Answer("HTTP/1.1 \(status)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    }

    /// `push` of one object to a tier scripted per request (HEAD, PUT, the PUT's retry).
    private func push(answers: [String]) async throws -> (result: WorkerBinary.Result, hits: Int) {
        let directory = TemporaryDirectory()
        let (_, cache) = try await directory.syncedLocalCache()
        let object = sha256(Array("public\n".utf8))
        let tier = try RawOrigin()
        defer { tier.stop() }
        tier.script("/cas/" + object, answers.map(Self.answer))
        let result = try await WorkerBinary.run(["push", "--cache-dir", cache, "--remote-cache", tier.url(""), "--progress", "never"])
        return (result, tier.hits("/cas/" + object))
    }

    @Test func anUploadIsTriedOnceMoreAfterATransientFailure() async throws {
        let busy = try await push(answers: ["404 Not Found", "503 Service Unavailable", "201 Created"])
        #expect(busy.result.code == 0 && busy.result.stdout.contains("1 uploaded"), "\(busy.result.stdout) \(busy.result.stderr)")
        #expect(busy.hits == 3)
        // 423 Locked: another runner is storing it. Tried again; locked again, it is there (or soon).
        let locked = try await push(answers: ["404 Not Found", "423 Locked", "201 Created"])
        #expect(locked.result.code == 0 && locked.result.stdout.contains("1 uploaded"), "\(locked.result.stdout) \(locked.result.stderr)")
        let stillLocked = try await push(answers: ["404 Not Found", "423 Locked", "423 Locked"])
        #expect(
            stillLocked.result.code == 0 && stillLocked.result.stdout.contains("1 already there"),
            "\(stillLocked.result.stdout) \(stillLocked.result.stderr)")
    }

    @Test func aFailedUploadSaysWhy() async throws {
        let failed = try await push(answers: ["404 Not Found", "500 Internal Server Error", "507 Insufficient Storage"])
        #expect(failed.result.code == 1, "\(failed.result.stdout) \(failed.result.stderr)")
        let object = sha256(Array("public\n".utf8))
        #expect(failed.result.stderr.contains("upload of sha256:\(object) failed: HTTP 507"), "\(failed.result.stderr)")
        #expect(failed.hits == 3, "one retry, no more")
    }
}
