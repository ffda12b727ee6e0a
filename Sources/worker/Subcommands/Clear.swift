import ArgumentParser
import ManifestSync

/// `worker clear`: delete every entry and object, under the lock.
struct Clear: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Delete every entry and object of the cache.")

    @Option(name: .customLong("cache-dir"), help: "The cache directory (env WORKER_CACHE_DIR).")
    var cacheDirectory: String?

    @OptionGroup var lock: LockOptions

    func run() async throws {
        try requireCache(CommonOptions.resolveCacheDirectory(cacheDirectory))
        let maintenance = CacheMaintenance(cacheDirectory: CommonOptions.resolveCacheDirectory(cacheDirectory), waitLock: try lock.seconds())
        do {
            let cleared = try await maintenance.clear()
            Console.out("cleared \(cleared.entries) entries and \(cleared.objects) objects\n")
        } catch {
            throw cacheExitCode(error)
        }
    }
}
