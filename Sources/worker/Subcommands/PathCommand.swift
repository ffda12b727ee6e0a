import ArgumentParser
import WorkerStore
import WorkerSupport

/// `worker path URL`: the cached file of URL's current version.
struct PathCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "path",
        abstract: "Print the cached file's path for URL (exit 1 if it is not cached).",
        discussion: """
            Never downloads (`worker get` does on a miss). Reading counts as a use for gc.

            Examples:
              worker path https://cdn.example.com/u/42.png
              open "$(worker path https://cdn.example.com/u/42.png)"
            """)

    @Argument(help: "The URL, as the manifest resolves it.")
    var url: String

    @OptionGroup(title: "Cache") var cache: CacheOptions

    func run() async throws {
        let cacheDirectory = try cache.existing()
        let maintenance = CacheMaintenance(cacheDirectory: cacheDirectory, context: .command())
        let path: String?
        do {
            path = try await maintenance.path(for: url)
        } catch {
            throw error
        }
        guard let path else {
            throw CommandFailure.unfinished(["not cached: \(Redact.url(url))"])
        }
        Console.out(path + "\n")
    }
}
