import Testing
import WorkerKinds

@testable import WorkerManifest

/// Where an http(s) URL connects, in one spelling (what every per-origin rule compares).
@Suite struct ConnectOriginTests {
    init() { Kinds.install() }

    private func origin(_ url: String) -> String? {
        Origin.http(url).map { "\($0.origin.scheme)://\($0.origin.host):\($0.origin.port ?? -1)" }
    }

    @Test func spellingsLibcurlConnectsAlikeAreOneOrigin() {
        let localhost = "http://localhost:21001"
        for url in [
            "http://localhost:21001/a", "http://user@localhost:21001/a", "http://user:pw@LOCALHOST.:21001",
            "http://localhost:021001/a", "http://%6cocalhost:21001/a", "http://[::ffff:127.0.0.1]:21001/",
            "http://127.0.0.1:21001/a", "http://127.1:21001", "http://0x7f.0.0.1:21001/a", "http://2130706433:21001/a",
            "http://[::1]:21001/a", "http://cdn.localhost:21001/a", "HTTP://localhost:21001?q", "http://localhost:21001#f",
        ] {
            #expect(origin(url) == localhost, "\(url) → \(origin(url) ?? "nil")")
        }
        #expect(origin("https://Example.COM/x") == "https://example.com:443")
        #expect(origin("https://example.com:443/x") == "https://example.com:443")
        #expect(origin("http://example.com/x") == "http://example.com:80")
        #expect(origin("http://[2001:DB8:0:0::1]:8080/") == "http://[2001:db8::1]:8080")
        #expect(origin("http://10.0.0.1/") == "http://10.0.0.1:80")
        #expect(origin("http://127.0.0.2/") == "http://127.0.0.2:80", "another loopback address is another host")
        for bad in ["http://h:99999/", "http://h:-1/", "http://h:8a/", "s3://bucket/k", "http://%zz/", "http://[::1/", "nothing"] {
            #expect(origin(bad) == nil, "\(bad)")
        }
    }
}
