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
            for await batch in queue.batches(every: 0.5) { finished += batch.count }
        }
        #expect(finished == files.count)
        // A consumer's timer the queue cancelled holds it until the engine has run the cancellation.
        for _ in 0..<200 where released != nil { try await Task.sleep(nanoseconds: 5_000_000) }
        // The meter (kept by the fetcher, which outlives the queue) held the queue strongly.
        #expect(released == nil, "the queue outlived its end: the meter's head handler still holds it")
        await fetcher.shutdown()
    }

    @Test func whileTheConsumerTakesNothingNoMoreThanHighWaterGroupsFinish() async throws {
        let directory = TemporaryDirectory()
        let files = (0..<12).map { directory.write("f\($0).txt", "body \($0)") }
        let store = try ContentStore(root: directory.path + "/cache")
        let fetcher = try Fetcher(store: store, settings: FetchSettings(), logger: Logger(label: "test"), network: false)
        let groups = files.indices.map { DownloadGroup(items: [$0], origin: nil) }
        let queue = DownloadQueue(fetcher: fetcher, groups: groups, jobs: 1, streams: 1, highWater: 3) { item, _ in
            FetchRequest(url: "file://" + files[item], expected: nil, headers: [], localRoot: directory.path)
        }
        queue.start()
        // The consumer is busy (a commit): the files are read in far less than this.
        try await Task.sleep(nanoseconds: 300_000_000)
        #expect(!queue.allStarted, "groups start only as the consumer takes what finished")
        #expect(queue.state.withLock { $0.ready.count } == 3)
        var finished = 0
        for await batch in queue.batches(every: 0.5) { finished += batch.count }
        #expect(finished == files.count, "every group once the consumer takes them")
        await fetcher.shutdown()
    }
}
