import ArgumentParser
import WorkerStore
import WorkerSupport

/// `worker rm URL…`: delete entries (and their objects once nothing else uses them).
struct Remove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rm",
        abstract: "Delete entries and their pending failures; an object goes when no other entry uses it (exit 1 if a URL was neither).",
        discussion: """
            Examples:
              worker rm https://cdn.example.com/u/42.png
              worker rm https://cdn.example.com/u/1.png https://cdn.example.com/u/2.png --wait-lock 30s
            """)

    @Argument(help: "URLs to remove.")
    var urls: [String]

    @OptionGroup(title: "Cache") var cache: CacheOptions

    @OptionGroup var lock: LockOptions

    func validate() throws {
        guard !urls.isEmpty else { throw ValidationError("give at least one URL") }
    }

    func run() async throws {
        let cacheDirectory = try cache.existing()
        let maintenance = CacheMaintenance(cacheDirectory: cacheDirectory, waitLock: lock.seconds(), context: .command())
        let result: CacheMaintenance.Removal
        do {
            result = try await maintenance.remove(urls: urls)
        } catch {
            throw error
        }
        Console.out(
            "removed \(result.removed.count) entr\(result.removed.count == 1 ? "y" : "ies"), "
                + "\(result.objectsDeleted) objects (\(Units.formatBytes(result.bytesFreed)))"
                + (result.failuresCleared.isEmpty
                    ? ""
                    : "; cleared \(result.failuresCleared.count) pending failure"
                        + (result.failuresCleared.count == 1 ? "" : "s")) + "\n")
        if !result.notCached.isEmpty { throw CommandFailure.unfinished(result.notCached.map { "not cached: \(Redact.url($0))" }) }
    }
}
