import Logging
import Testing
import WorkerTestSupport

@testable import WorkerFetch
@testable import WorkerStore

/// The queue's life and its consumer, on local files: the transfer meter holds the queue (its
/// head handler) only until the queue's end; a consumer that takes nothing holds new groups back.
@Suite(.hangLimit) struct DownloadQueueTests {
    /// `count` local files, a fetcher without network, and a queue of one group per file.
    private struct Local {
        let directory = TemporaryDirectory()
        let files: [String]
        let fetcher: Fetcher

        init(count: Int) throws {
            let directory = directory
            files = (0..<count).map { directory.write("f\($0).txt", "body \($0)") }
            fetcher = try Fetcher(
                store: try ContentStore(root: directory.path + "/cache"), settings: FetchSettings(),
                logger: Logger(label: "test"), network: false)
        }

        func queue(jobs: Int, highWater: Int = DownloadQueue.highWater) -> DownloadQueue {
            let (files, root) = (files, directory.path)
            return DownloadQueue(
                fetcher: fetcher, groups: files.indices.map { DownloadGroup(items: [$0]) }, jobs: jobs,
                streams: 1, highWater: highWater
            ) { item, _ in
                FetchRequest(url: "file://" + files[item], expected: nil, headers: [], localRoot: root)
            }
        }
    }

    @Test func aQueueIsLetGoOnceItsConsumerHasSeenTheEnd() async throws {
        let local = try Local(count: 3)
        weak var released: DownloadQueue?
        var finished = 0
        do {
            let queue = local.queue(jobs: 2)
            released = queue
            queue.start()
            for await batch in queue.batches(every: 0.5) { finished += batch.count }
        }
        #expect(finished == local.files.count)
        // A consumer's timer the queue cancelled holds it until the engine has run the cancellation.
        for _ in 0..<200 where released != nil { try await Task.sleep(nanoseconds: 5_000_000) }
        // The meter (kept by the fetcher, which outlives the queue) held the queue strongly.
        #expect(released == nil, "the queue outlived its end: the meter's head handler still holds it")
        await local.fetcher.shutdown()
    }

    @Test func whileTheConsumerTakesNothingNoMoreThanHighWaterGroupsFinish() async throws {
        let local = try Local(count: 12)
        let queue = local.queue(jobs: 1, highWater: 3)
        queue.start()
        // The consumer is busy (a commit): the files are read in far less than this.
        try await Task.sleep(nanoseconds: 300_000_000)
        #expect(!queue.allStarted, "groups start only as the consumer takes what finished")
        #expect(queue.state.withLock { $0.coordinator.ready.count } == 3)
        var finished = 0
        for await batch in queue.batches(every: 0.5) { finished += batch.count }
        #expect(finished == local.files.count, "every group once the consumer takes them")
        await local.fetcher.shutdown()
    }
}
