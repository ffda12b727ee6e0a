import Testing
import WorkerSupport
import WorkerTestSupport

@testable import WorkerFetch
@testable import WorkerManifest
@testable import WorkerStore

/// The local-file source keeps a file inside its manifest's folder, or (a request without one,
/// as `verify --repair` makes) inside a folder it was told of.
@Suite(.hangLimit) struct LocalFileSourceTests {
    private func answer(
        _ request: FetchRequest, knownFolders: [String], in directory: TemporaryDirectory
    ) async throws
        -> SourceOutcome.Answer
    {
        let store = try ContentStore(root: directory.path + "/cache")
        let source = LocalFileSource(store: store, settings: FetchSettings(), knownFolders: knownFolders)
        let engine = try LocalEngine()
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
        let source = LocalFileSource(
            store: try ContentStore(root: directory.path + "/cache"), settings: FetchSettings(),
            knownFolders: [folder])
        #expect(source.serves(FetchRequest(url: "file://" + inside, expected: nil, headers: [], localRoot: nil)))
        #expect(!source.serves(FetchRequest(url: "http://127.0.0.1:1/a", expected: nil, headers: [], localRoot: nil)))

        let read = try await answer(
            FetchRequest(
                url: "file://" + inside,
                expected: try ContentHash.parse("sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad").get(),
                headers: [], localRoot: nil),
            knownFolders: [folder], in: directory)
        guard case .delivered(.body(let body)) = read else {
            Issue.record("expected the file, got \(read)")
            return
        }
        #expect(body.size == 3)

        let refused = try await answer(
            FetchRequest(url: "file://" + outside, expected: nil, headers: [], localRoot: nil),
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
        let read = try await answer(
            FetchRequest(
                url: "file://" + outside, expected: nil, headers: [],
                localRoot: directory.path + "/site"),
            knownFolders: [directory.path + "/elsewhere"], in: directory)
        guard case .failed(let failure) = read else {
            Issue.record("a manifest's entry must stay in that manifest's folder, got \(read)")
            return
        }
        #expect(failure.message.contains("resolves outside the manifest's folder"))
    }
}
