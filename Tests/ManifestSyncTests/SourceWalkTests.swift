import Synchronization
import Testing
@testable import WorkerFetch
@testable import WorkerManifest
@testable import WorkerStore
import WorkerSupport
import WorkerTestSupport


/// A download's walk through its sources, with fake sources: a miss passes on, a delivery or a
/// failure ends the walk, a source that does not serve the URL is never asked.
@Suite(.hangLimit) struct SourceWalkTests {
    /// Answers every request it serves with `answer`, counting the requests.
    final class FakeSource: ContentSource {
        let kind: SourceKind
        let answer: SourceOutcome.Answer
        let scheme: String
        let asked = Atomic<Int>(0)

        init(_ kind: SourceKind, _ answer: SourceOutcome.Answer, scheme: String = "http") {
            self.kind = kind
            self.answer = answer
            self.scheme = scheme
        }

        func serves(_ request: FetchRequest) -> Bool { request.url.hasPrefix(scheme + ":") }

        func fetch(_ request: FetchRequest, lane: FetchLane, done: @escaping @Sendable (SourceOutcome) -> Void) {
            asked.add(1, ordering: .relaxed)
            done(SourceOutcome(answer: answer, attempts: 2, bytes: 10))
        }
    }

    private static let body = FetchedBody(temporaryPath: "/nonexistent/tmp/x", sha256: String(repeating: "a", count: 64),
                                          size: 3, etag: nil, lastModified: nil)
    private let request = FetchRequest(url: "http://127.0.0.1:1/a", expected: nil, headers: [], localRoot: nil)

    private func walk(_ sources: [any ContentSource], control: StopRequest = StopRequest()) async throws -> FetchResult {
        let engine = LocalEngine()
        let lane = FetchLane(control: control, engine: engine, gate: nil)
        let result = await withCheckedContinuation { continuation in
            SourceWalk(sources).fetch(request, lane: lane) { continuation.resume(returning: $0) }
        }
        await engine.shutdown()
        return result
    }

    @Test func aMissPassesTheRequestToTheNextSource() async throws {
        let missing = FakeSource(.local, .miss)
        let delivering = FakeSource(.origin, .delivered(.body(Self.body)))
        let result = try await walk([missing, delivering])
        guard case .success(.body(let body)) = result.result else {
            Issue.record("expected a body, got \(result.result)")
            return
        }
        #expect(body.sha256 == Self.body.sha256)
        #expect(result.source == .origin)
        #expect(result.attempts == 4, "attempts add up over the sources asked")
        #expect(result.bytesReceived == 20)
        #expect(missing.asked.load(ordering: .relaxed) == 1)
        #expect(!result.uploadsToTier, "the walk itself offers nothing to a tier (the fetcher decides)")
    }

    @Test func aSourceThatDoesNotServeTheURLIsNeverAsked() async throws {
        let notServing = FakeSource(.local, .miss, scheme: "file")
        let delivering = FakeSource(.origin, .delivered(.body(Self.body)))
        let result = try await walk([notServing, delivering])
        #expect(result.source == .origin && result.attempts == 2)
        #expect(notServing.asked.load(ordering: .relaxed) == 0)
    }

    @Test func aFailureEndsTheWalk() async throws {
        let failing = FakeSource(.local, .failed(FetchFailure(.httpStatus, "HTTP 404", httpStatus: 404)))
        let after = FakeSource(.origin, .delivered(.body(Self.body)))
        let result = try await walk([failing, after])
        guard case .failure(let failure) = result.result else {
            Issue.record("expected the failure, got \(result.result)")
            return
        }
        #expect(failure.httpStatus == 404)
        #expect(result.source == .local)
        #expect(after.asked.load(ordering: .relaxed) == 0, "a failure is not a miss: no later source is asked")
    }

    @Test func aSourceThatDoesNotServeTheURLIsNotAsked() async throws {
        let localOnly = FakeSource(.local, .failed(FetchFailure(.io, "must not be asked")), scheme: "file")
        let origin = FakeSource(.origin, .delivered(.notModified))
        let result = try await walk([localOnly, origin])
        guard case .success(.notModified) = result.result else {
            Issue.record("expected the origin's answer, got \(result.result)")
            return
        }
        #expect(localOnly.asked.load(ordering: .relaxed) == 0)
        #expect(result.attempts == 2)
    }

    @Test func whenEverySourceMissesTheDownloadFails() async throws {
        let result = try await walk([FakeSource(.local, .miss), FakeSource(.origin, .miss)])
        guard case .failure(let failure) = result.result else {
            Issue.record("expected a failure, got \(result.result)")
            return
        }
        #expect(failure.message.contains("no source has"))
        #expect(result.source == nil)
        #expect(result.attempts == 4)
    }

    @Test func aStoppedDownloadAsksNoSource() async throws {
        let control = StopRequest()
        control.stop(because: "the run's deadline passed")
        let origin = FakeSource(.origin, .delivered(.body(Self.body)))
        let result = try await walk([origin], control: control)
        guard case .failure(let failure) = result.result else {
            Issue.record("expected cancelled, got \(result.result)")
            return
        }
        #expect(failure.reason == .cancelled)
        #expect(failure.message == "the run's deadline passed")
        #expect(origin.asked.load(ordering: .relaxed) == 0)
    }
}

/// The local-file source keeps a file inside its manifest's folder, or (a request without one,
/// as `verify --repair` makes) inside a folder it was told of.
@Suite(.hangLimit) struct LocalFileSourceTests {
    private func answer(_ request: FetchRequest, knownFolders: [String], in directory: TemporaryDirectory) async throws
        -> SourceOutcome.Answer {
        let store = try ContentStore(root: directory.path + "/cache")
        let source = LocalFileSource(store: store, settings: FetchSettings(), knownFolders: knownFolders)
        let engine = LocalEngine()
        let lane = FetchLane(control: StopRequest(), engine: engine, gate: nil)
        let outcome = await withCheckedContinuation { continuation in
            source.fetch(request, lane: lane) { continuation.resume(returning: $0) }
        }
        await engine.shutdown()
        return outcome.answer
    }

    @Test func aFileInsideAKnownFolderIsReadAndOneOutsideIsNot() async throws {
        let directory = TemporaryDirectory()
        let inside = directory.write("site/a.txt", "abc")
        let outside = directory.write("elsewhere/b.txt", "def")
        let folder = directory.path + "/site"
        let source = LocalFileSource(store: try ContentStore(root: directory.path + "/cache"), settings: FetchSettings(),
                                     knownFolders: [folder])
        #expect(source.serves(FetchRequest(url: "file://" + inside, expected: nil, headers: [], localRoot: nil)))
        #expect(!source.serves(FetchRequest(url: "http://127.0.0.1:1/a", expected: nil, headers: [], localRoot: nil)))

        let read = try await answer(FetchRequest(url: "file://" + inside, expected: try ContentHash.parse("sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad").get(),
                                               headers: [], localRoot: nil),
                                  knownFolders: [folder], in: directory)
        guard case .delivered(.body(let body)) = read else {
            Issue.record("expected the file, got \(read)")
            return
        }
        #expect(body.size == 3)

        let refused = try await answer(FetchRequest(url: "file://" + outside, expected: nil, headers: [], localRoot: nil),
                                     knownFolders: [folder], in: directory)
        guard case .failed(let failure) = refused else {
            Issue.record("a file outside every known folder must not be read, got \(refused)")
            return
        }
        #expect(failure.message.contains("read only for the manifest whose folder holds it"))
    }

    @Test func aRequestsOwnFolderIsTheOneItMustStayIn() async throws {
        let directory = TemporaryDirectory()
        let outside = directory.write("elsewhere/b.txt", "def")
        let read = try await answer(FetchRequest(url: "file://" + outside, expected: nil, headers: [],
                                               localRoot: directory.path + "/site"),
                                  knownFolders: [directory.path + "/elsewhere"], in: directory)
        guard case .failed(let failure) = read else {
            Issue.record("a manifest's entry must stay in that manifest's folder, got \(read)")
            return
        }
        #expect(failure.message.contains("resolves outside the manifest's folder"))
    }
}
