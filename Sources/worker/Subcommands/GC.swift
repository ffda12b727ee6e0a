import ArgumentParser
import FoundationEssentials
import Glibc
import WorkerLifecycle
import WorkerSupport

/// `worker gc`: evict by age, then by size, least recently used first.
struct GC: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gc",
        abstract: "Evict entries not used for --max-age, then least recently used ones while objects exceed --max-size.",
        discussion: """
            "Used" means named by a synced manifest or read through `worker path`. Over --max-size, \
            entries go least recently used first until the objects take at most 80 % of it. An object \
            goes when no entry uses it.

            Examples:
              worker gc --max-age 30d --max-size 2GB
              worker gc --max-size 500MB --dry-run
              worker gc --json
            """)

    @OptionGroup(title: "Cache") var cache: CacheOptions

    @Option(name: .customLong("max-age"), help: "Evict entries not used for this long (e.g. 7d; 0 disables).")
    var maxAge = Seconds(7 * 86400)

    @Option(name: .customLong("max-size"), help: "Keep the objects under this size (e.g. 2GB, 512MiB).")
    var maxSize: ByteSize?

    @Flag(name: .customLong("dry-run"), help: "Show what would be evicted; change nothing.")
    var dryRun = false

    @Flag(help: "Print JSON instead of text.")
    var json = false

    @OptionGroup var lock: LockOptions

    static let listLimit = 20

    func run() async throws {
        let cacheDirectory = try cache.existing()
        var collector = GarbageCollector(cacheDirectory: cacheDirectory)
        collector.context = .command()
        collector.maxAge = maxAge.value > 0 ? maxAge.value : nil
        collector.maxSize = maxSize?.value
        collector.dryRun = dryRun
        collector.waitLock = lock.seconds()
        let result: GarbageCollector.Result
        do {
            result = try await collector.collect()
        } catch {
            throw error
        }
        if json {
            Console.out(String(decoding: try Console.json(result), as: UTF8.self) + "\n")
            return
        }
        let verb = dryRun ? "would evict" : "evicted"
        var lines = [
            "worker gc: \(verb) \(result.removedByAge.count) entries by age and \(result.removedBySize.count) by size; "
                + "objects \(Units.formatBytes(result.bytesBefore)) → \(Units.formatBytes(result.bytesAfter))"
        ]
        let evicted = result.removedByAge + result.removedBySize
        for url in evicted.prefix(Self.listLimit) { lines.append("  \(url)") }
        if evicted.count > Self.listLimit {
            lines.append("  … and \(evicted.count - Self.listLimit) more (--json lists them all)")
        }
        if result.unindexedObjectsDeleted > 0 {
            lines.append("  removed \(result.unindexedObjectsDeleted) objects an interrupted sync left unindexed")
        }
        Console.out(lines.joined(separator: "\n") + "\n")
    }
}
