import Testing
@testable import ManifestSync

@Suite struct UnitsTests {
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
    }
}

@Suite struct URLCheckTests {
    @Test(arguments: ["http://h", "https://cdn.example.com/u/1.png?x=1&y=%20#f", "http://user:pw@h:8080/p", "http://[::1]:80/x"])
    func wellFormed(url: String) {
        #expect(URLResolver.isWellFormedAbsolute(url))
    }

    @Test(arguments: ["http:/h", "http://", "http:///path", "http://:80/x", "http://h/a b", "http://h/é", "http://h/%zz",
                      "http://h/%2", "http://h/<x>", "http://h\\x", "http://h/\u{7F}"])
    func malformed(url: String) {
        #expect(!URLResolver.isWellFormedAbsolute(url))
    }
}
