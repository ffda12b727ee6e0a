import ArgumentParser
import WorkerStore

/// `worker clear`: delete every entry and object, under the lock.
struct Clear: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clear",
        abstract: "Delete every entry and object of the cache.",
        discussion: """
            Rows go before files, under the lock; the cache stays usable.

            Examples:
              worker clear
              worker clear --cache-dir /tmp/demo-cache --wait-lock 1m
            """)

    @OptionGroup(title: "Cache") var cache: CacheOptions

    @OptionGroup var lock: LockOptions

    func run() async throws {
        let cacheDirectory = try cache.existing()
        let maintenance = CacheMaintenance(cacheDirectory: cacheDirectory, waitLock: lock.seconds(), context: .command())
        do {
            let cleared = try await maintenance.clear()
            Console.out("cleared \(cleared.entries) entries and \(cleared.objects) objects\n")
        } catch {
            throw error
        }
    }
}
