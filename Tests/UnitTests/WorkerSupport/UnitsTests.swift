import Foundation
import Testing
import WorkerTestSupport

@testable import WorkerManifest
@testable import WorkerSupport

@Suite(.hangLimit) struct UnitsTests {
    @Test func durations() {
        #expect(Units.duration("30") == 30)
        #expect(Units.duration("1.5s") == 1.5)
        #expect(Units.duration("5m") == 300)
        #expect(Units.duration("2h") == 7200)
        #expect(Units.duration("7d") == 604_800)
        #expect(Units.duration("250ms") == 0.25)
        #expect(Units.duration("5 parsecs") == nil)
        #expect(Units.duration("-1") == nil)
        #expect(Units.duration("") == nil)
    }

    @Test func sizes() {
        #expect(Units.size("1048576") == 1_048_576)
        #expect(Units.size("256MiB") == 256 << 20)
        #expect(Units.size("1MB") == 1_000_000)
        #expect(Units.size("2GB") == 2_000_000_000)
        #expect(Units.size("1.5KiB") == 1536)
        #expect(Units.size("10M") == 10 << 20)
        #expect(Units.size("ten") == nil)
        #expect(Units.size("1XB") == nil)
    }

    @Test func redactsUserInfoOnly() {
        #expect(Redact.url("https://user:pw@cdn.example.com/a@b.png") == "https://cdn.example.com/a@b.png")
        #expect(Redact.url("https://cdn.example.com/a@b.png") == "https://cdn.example.com/a@b.png")
        #expect(Redact.url("http://token@h:8080/x?y=@") == "http://h:8080/x?y=@")
        // The last @ of the authority ends the user info; the rest is kept byte for byte.
        #expect(Redact.url("https://a@b:pw@host/x") == "https://host/x")
        #expect(Redact.url("https://usér:pässword@hôst/ünïcode?q=1#f") == "https://hôst/ünïcode?q=1#f")
        #expect(Redact.url("https://user:pw@host") == "https://host")
        // No `://`, or nothing after it: not a URL with an authority; as it is.
        #expect(Redact.url("user@host:path") == "user@host:path")
        #expect(Redact.url("s3:/a@b") == "s3:/a@b")
        #expect(Redact.url("x://") == "x://")
    }
}
