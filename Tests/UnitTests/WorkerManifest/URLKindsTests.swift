import Testing
import WorkerKinds
import WorkerTestSupport

@testable import WorkerManifest

/// A scheme is read up to its colon; a byte no scheme holds before it (a relative path's `/`)
/// means there is none.
@Suite(.hangLimit) struct SchemeTests {
    init() { Kinds.install() }

    @Test func schemesAreReadUpToTheirColonAndLowercased() {
        #expect(URLKinds.scheme(of: "HTTP://h/x") == "http")
        #expect(URLKinds.scheme(of: "s3://bucket/key") == "s3")
        #expect(URLKinds.scheme(of: "a+b.c-9:rest") == "a+b.c-9")
        #expect(URLKinds.scheme(of: "ftp:") == "ftp")
    }

    @Test(arguments: ["", ":x", "1a:b", "scale/0000/a:b.png", "a b:c", "abc", "é:x", "/x:y", "a_b:c"])
    func noScheme(text: String) {
        #expect(URLKinds.scheme(of: text) == nil)
    }
}
