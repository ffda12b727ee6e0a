import Foundation
import Testing
import WorkerTestSupport

@testable import WorkerFetch
@testable import WorkerManifest
@testable import WorkerStore
@testable import WorkerSupport

/// The response logic without an HTTP client: heads, bodies and ends fed by hand.
@Suite(.hangLimit) struct ResponseHandlerTests {
    /// sha256("hello world"), by sha256sum.
    private let helloWorld = "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9"

    private func handler(
        _ store: ContentStore, expected: String? = nil, conditional: Bool = false,
        timeout: Int64 = 60
    ) throws -> ResponseHandler {
        ResponseHandler(
            store: store, expected: try expected.map { try ContentHash.parse("sha256:" + $0).get() },
            maxSize: 1 << 20, conditional: conditional, deadline: Monotonic.now() + Double(timeout),
            entryTimeout: Double(timeout), url: "http://h/a", resume: nil, resumeThreshold: 1 << 20)
    }

    private func temporaryFiles(_ store: ContentStore) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: store.tmpDirectory)) ?? []
    }

    private func feed(_ handler: inout ResponseHandler, _ text: String) -> FetchFailure? {
        Array(text.utf8).withUnsafeBytes { handler.body($0) }
    }

    @Test func aVerifiedBodyEndsAsAFileWithItsHashAndValidators() throws {
        let directory = TemporaryDirectory()
        let store = try ContentStore(root: directory.path + "/cache")
        var response = try handler(store, expected: helloWorld)
        let headers = ["content-length": "11", "etag": "\"v1\""]
        #expect(response.head(status: 200, httpMajorVersion: 2, keepAlive: true) { headers[$0].map { [$0] } ?? [] } == nil)
        #expect(response.multiplexed && !response.closesConnection)
        #expect(response.keepsBody && response.bytesToCome == 11, "what the head said, for the transfer to read in place")
        #expect(feed(&response, "hello ") == nil)
        #expect(feed(&response, "world") == nil)
        #expect(response.bytesReceived == 11)
        guard case .success(.body(let file, let etag, _)) = response.finish() else {
            Issue.record("no body")
            return
        }
        #expect(file.sha256 == helloWorld && file.size == 11 && etag == "\"v1\"")
        #expect(!response.keepsBody, "the body is handed over: nothing more is kept")
        #expect(try String(contentsOfFile: file.path, encoding: .utf8) == "hello world")
    }

    @Test func aShortBodyIsTruncatedAndLeavesNoFile() throws {
        let directory = TemporaryDirectory()
        let store = try ContentStore(root: directory.path + "/cache")
        var response = try handler(store)
        #expect(
            response.head(status: 200, httpMajorVersion: 1, keepAlive: false) { ["content-length": "11"][$0].map { [$0] } ?? [] } == nil)
        #expect(response.closesConnection)
        #expect(feed(&response, "hello") == nil)
        guard case .failure(let failure) = response.finish() else {
            Issue.record("a short body was accepted")
            return
        }
        #expect(failure.reason == .connection && failure.message == "truncated body: received 5 of 11 bytes")
        #expect(temporaryFiles(store).isEmpty, "no validator: nothing is kept to resume")
    }

    @Test func aWrongHashIsAMismatchAndLeavesNoFile() throws {
        let directory = TemporaryDirectory()
        let store = try ContentStore(root: directory.path + "/cache")
        var response = try handler(store, expected: String(repeating: "0", count: 64))
        #expect(response.head(status: 200, httpMajorVersion: 1, keepAlive: true) { _ in [] } == nil)
        #expect(feed(&response, "hello world") == nil)
        guard case .failure(let failure) = response.finish() else {
            Issue.record("a mismatch was accepted")
            return
        }
        #expect(failure.reason == .hashMismatch)
        #expect(temporaryFiles(store).isEmpty)
    }

    @Test func redirectsNotModifiedAndErrorStatusesOpenNoFile() throws {
        let directory = TemporaryDirectory()
        let store = try ContentStore(root: directory.path + "/cache")
        var redirect = try handler(store)
        #expect(redirect.head(status: 302, httpMajorVersion: 1, keepAlive: true) { ["location": "/b"][$0].map { [$0] } ?? [] } == nil)
        #expect(!redirect.keepsBody && redirect.bytesToCome == 0, "a redirect's body is not content")
        #expect(feed(&redirect, "moved") == nil && redirect.bytesReceived == 0, "a redirect's body is dropped")
        guard case .success(.redirect(302, "/b")) = redirect.finish() else { Issue.record("no redirect"); return }

        var unchanged = try handler(store, conditional: true)
        #expect(unchanged.head(status: 304, httpMajorVersion: 1, keepAlive: true) { _ in [] } == nil)
        guard case .success(.notModified) = unchanged.finish() else { Issue.record("no 304"); return }

        var busy = try handler(store)
        #expect(busy.head(status: 503, httpMajorVersion: 1, keepAlive: true) { ["retry-after": "7"][$0].map { [$0] } ?? [] } == nil)
        guard case .success(.status(503, 7)) = busy.finish() else { Issue.record("no status"); return }
        #expect(temporaryFiles(store).isEmpty)
    }

    @Test func anEncodedBodyAndAnOversizedOneAreRefusedAtTheHead() throws {
        let directory = TemporaryDirectory()
        let store = try ContentStore(root: directory.path + "/cache")
        var encoded = try handler(store)
        let gzip = encoded.head(status: 200, httpMajorVersion: 1, keepAlive: true) { ["content-encoding": "gzip"][$0].map { [$0] } ?? [] }
        #expect(gzip?.detail == .unrequestedEncoding("gzip"))
        var large = try handler(store)
        let tooLarge = large.head(status: 200, httpMajorVersion: 1, keepAlive: true) {
            ["content-length": "2000000"][$0].map { [$0] } ?? []
        }
        #expect(tooLarge?.reason == .tooLarge)
        #expect(temporaryFiles(store).isEmpty)
    }

    @Test func pastTheEntryTimeoutTheBodyStops() throws {
        let directory = TemporaryDirectory()
        let store = try ContentStore(root: directory.path + "/cache")
        var response = try handler(store, timeout: -1)
        #expect(response.head(status: 200, httpMajorVersion: 1, keepAlive: true) { _ in [] } == nil)
        #expect(response.keepsBody && response.bytesToCome == nil, "no Content-Length: the length is not known")
        #expect(feed(&response, "hello")?.reason == .timeout)
        #expect(temporaryFiles(store).isEmpty, "below the resume threshold nothing is kept")
    }
}
