import Logging
import Testing
import WorkerTestSupport

@testable import WorkerFetch
@testable import WorkerStore

/// The queue's life: the transfer meter holds it (its head handler) only until the queue's end.
@Suite(.hangLimit) struct DownloadQueueTests {
    @Test func aQueueIsLetGoOnceItsConsumerHasSeenTheEnd() async throws {
        let directory = TemporaryDirectory()
        let files = (0..<3).map { directory.write("f\($0).txt", "body \($0)") }
        let store = try ContentStore(root: directory.path + "/cache")
        let fetcher = try Fetcher(store: store, settings: FetchSettings(), logger: Logger(label: "test"), network: false)
        let groups = files.indices.map { DownloadGroup(items: [$0], origin: nil) }
        weak var released: DownloadQueue?
        var finished = 0
        do {
            let queue = DownloadQueue(fetcher: fetcher, groups: groups, jobs: 2, streams: 1) { item, _ in
                FetchRequest(url: "file://" + files[item], expected: nil, headers: [], localRoot: directory.path)
            }
            released = queue
            queue.start()
            while let batch = await queue.next() { finished += batch.count }
        }
        #expect(finished == files.count)
        // The meter (kept by the fetcher, which outlives the queue) held the queue strongly.
        #expect(released == nil, "the queue outlived its end: the meter's head handler still holds it")
        await fetcher.shutdown()
    }
}
