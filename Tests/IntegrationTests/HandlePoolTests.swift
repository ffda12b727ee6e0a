import CCurl
import Foundation
import Synchronization
import Testing
import WorkerTestSupport

@testable import CurlTransport
@testable import WorkerFetch
@testable import WorkerStore
@testable import WorkerSupport

/// Plain GETs reuse a libcurl handle where libcurl can do so safely (8.1.0 or later; Debian 12's
/// 7.88.1 cannot, see `ReusedConnectionTests`). Forced on here against a well-behaved server: what
/// one request set on its handle must not reach the next one.
@Suite(.hangLimit) struct HandlePoolTests {
    @Test func reuseFollowsTheLibcurlVersion() {
        #expect(!HandlePool.reusesHandles(libcurlVersion: 0x07_58_01), "7.88.1, Debian 12")
        #expect(!HandlePool.reusesHandles(libcurlVersion: 0x08_00_01))
        #expect(HandlePool.reusesHandles(libcurlVersion: 0x08_01_00))
        #expect(HandlePool.reusesHandles(libcurlVersion: 0x08_0E_01))
    }

    private let body = Array("avatar bytes\n".utf8)

    private func engine(reusesHandles: Bool) throws -> CurlEngine {
        try CurlEngine(
            options: .init(
                connectTimeout: 5, readTimeout: 5, connectionsPerHost: 1, streamsPerConnection: 1,
                trustedCertificates: nil, reusesHandles: reusesHandles))
    }

    /// One exchange on `engine`, to its end.
    private func exchange(
        _ engine: CurlEngine, _ request: TransferRequest,
        handler: @escaping @Sendable () -> ResponseHandler
    ) async -> ExchangeReply {
        await withCheckedContinuation { (done: CheckedContinuation<ExchangeReply, Never>) in
            let transfer = engine.transfer(request, handler: handler()) { done.resume(returning: $0) }
            engine.start(transfer)
        }
    }

    private func get(
        _ engine: CurlEngine, _ url: String, headers: [String] = [], timeouts: TransferTimeouts? = nil,
        store: ContentStore
    ) async -> ExchangeReply {
        let deadline = Monotonic.now() + 30
        var request = TransferRequest(url: url, headers: headers, deadline: deadline)
        request.timeouts = timeouts
        return await exchange(engine, request) {
            ResponseHandler(
                store: store, expected: nil, maxSize: 1 << 20, conditional: false, deadline: deadline,
                entryTimeout: 30, url: url, resume: nil, resumeThreshold: 1 << 20)
        }
    }

    /// How many handles the engine keeps, read on its thread.
    private func keptHandles(_ engine: CurlEngine) async -> Int {
        await withCheckedContinuation { (done: CheckedContinuation<Int, Never>) in
            engine.execute { done.resume(returning: engine.loop.value.handles.idleCount) }
        }
    }

    private func isBody(_ reply: ExchangeReply) -> Bool {
        if case .success(.body(let file, _, _)) = reply.result { return file.size == Int64(body.count) }
        return false
    }

    @Test func aKeptHandleCarriesNothingFromOneRequestIntoTheNext() async throws {
        let origin = try RawOrigin()
        defer { origin.stop() }
        let ok = RawOrigin.Answer("HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\n\r\n", body: body, keepAlive: true)
        let headAnswer = RawOrigin.Answer("HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\n\r\n", keepAlive: true)
        for path in ["/a", "/c", "/d", "/e"] { origin.script(path, [ok]) }
        origin.script("/b", [headAnswer])
        let directory = TemporaryDirectory()
        let store = try ContentStore(root: directory.path + "/cache")
        let engine = try engine(reusesHandles: true)

        // a: a GET with a header of its own; its handle is kept.
        #expect(isBody(await get(engine, origin.url("/a"), headers: ["X-Only-A: 1"], store: store)))
        #expect(await keptHandles(engine) == 1)
        // b: a HEAD takes a new handle (it sets CURLOPT_NOBODY), which is not kept.
        var head = TransferRequest(url: origin.url("/b"), headers: [], deadline: Monotonic.now() + 30)
        head.method = .head
        let headURL = origin.url("/b")
        let headReply = await exchange(engine, head) { .statusOnly(url: headURL, deadline: Monotonic.now() + 30) }
        guard case .success(.status(200, _)) = headReply.result else {
            Issue.record("the HEAD: \(headReply.result)")
            return
        }
        #expect(await keptHandles(engine) == 1)
        // c: a plain GET takes a's handle: no header of a's, a GET with its body (not the HEAD's
        // NOBODY), and still one handle kept (a new one would make two).
        #expect(isBody(await get(engine, origin.url("/c"), store: store)))
        #expect(await keptHandles(engine) == 1)
        // d: a GET with timeouts of its own sets options: a new handle, not kept.
        let own = TransferTimeouts(connect: 2, read: 2, slowestRate: 1)
        #expect(isBody(await get(engine, origin.url("/d"), timeouts: own, store: store)))
        #expect(await keptHandles(engine) == 1)
        // e: the kept handle again, without d's timeouts or a's header.
        #expect(isBody(await get(engine, origin.url("/e"), store: store)))
        await engine.shutdown()

        let a = try #require(origin.requests("/a").first)
        #expect(a.hasPrefix("GET /a ") && a.contains("X-Only-A: 1"), "\(a)")
        let b = try #require(origin.requests("/b").first)
        #expect(b.hasPrefix("HEAD /b "), "\(b)")
        for path in ["/c", "/e"] {
            let request = try #require(origin.requests(path).first)
            #expect(request.hasPrefix("GET \(path) ") && !request.contains("X-Only-A"), "\(request)")
        }
        #expect(origin.requestCount == 5)
    }

    @Test func aTransferCutShortLeavesNoHandle() async throws {
        let origin = try RawOrigin()
        defer { origin.stop() }
        // Half the body, then silence: the entry's deadline ends it, not libcurl.
        let full = Array(repeating: UInt8(ascii: "x"), count: 4096)
        origin.script(
            "/slow",
            [
                RawOrigin.Answer(
                    "HTTP/1.1 200 OK\r\nContent-Length: \(full.count)\r\n\r\n", body: full,
                    stallAfter: 2048)
            ])
        let directory = TemporaryDirectory()
        let store = try ContentStore(root: directory.path + "/cache")
        let engine = try engine(reusesHandles: true)
        let deadline = Monotonic.now() + 0.5
        let request = TransferRequest(url: origin.url("/slow"), headers: [], deadline: deadline)
        let reply = await exchange(engine, request) {
            ResponseHandler(
                store: store, expected: nil, maxSize: 1 << 20, conditional: false, deadline: deadline,
                entryTimeout: 0.5, url: request.url, resume: nil, resumeThreshold: 1 << 20)
        }
        guard case .failure(let failure) = reply.result else {
            Issue.record("the stalled transfer ended as \(reply.result)")
            return
        }
        #expect(failure.reason == .timeout)
        // Its handle may be mid-response: cleaned up, not kept.
        #expect(await keptHandles(engine) == 0)
        await engine.shutdown()
    }

    @Test func thePoolKeepsAtMostItsCapacityAndDrainsEveryHandle() throws {
        #expect(Libcurl.loadProblem() == nil)
        var pool = HandlePool(enabled: true)
        for _ in 0..<HandlePool.capacity + 3 {
            let handle = try #require(worker_curl_easy_init())
            pool.giveBack(handle, reusable: true)
        }
        #expect(pool.idleCount == HandlePool.capacity)
        pool.giveBack(try #require(worker_curl_easy_init()), reusable: false)
        #expect(pool.idleCount == HandlePool.capacity)
        #expect(pool.take(forPlainGet: false) == nil)
        let kept = pool.take(forPlainGet: true)
        let taken = try #require(kept)
        #expect(pool.idleCount == HandlePool.capacity - 1)
        pool.giveBack(taken, reusable: true)
        pool.drain()
        #expect(pool.idleCount == 0)
        #expect(pool.take(forPlainGet: true) == nil)

        var off = HandlePool(enabled: false)
        off.giveBack(try #require(worker_curl_easy_init()), reusable: true)
        #expect(off.idleCount == 0)
    }

    @Test func withoutReuseEveryHandleIsCleanedUp() async throws {
        let origin = try RawOrigin()
        defer { origin.stop() }
        origin.script("/a", [RawOrigin.Answer("HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\n\r\n", body: body, keepAlive: true)])
        let directory = TemporaryDirectory()
        let store = try ContentStore(root: directory.path + "/cache")
        let engine = try engine(reusesHandles: false)
        #expect(isBody(await get(engine, origin.url("/a"), store: store)))
        #expect(await keptHandles(engine) == 0)
        await engine.shutdown()
    }
}
