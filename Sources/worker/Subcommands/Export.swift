import ArgumentParser
import FoundationEssentials
import Glibc
import ManifestSync

extension ExportLayout: ExpressibleByArgument {}

/// `worker export --layout LAYOUT DIR [MANIFEST…]`: the cache in an app library's layout.
struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write cached files into DIR in an app library's layout (hard links where possible).",
        discussion: """
            sdwebimage: MD5 of the URL + its path extension (SDImageCache). kingfisher: SHA-256 of the \
            URL (Kingfisher's DiskStorage, default settings). hash: <sha256 of the content>.<extension>. \
            With manifests, only their entries are exported.

            Examples:
              worker export --layout sdwebimage ./Bundle/Avatars manifests/demo.yaml
              worker export --layout kingfisher ./Caches/Kingfisher
              worker export --layout hash /srv/static/by-hash
            """)

    @Option(help: "sdwebimage, kingfisher or hash.")
    var layout: ExportLayout

    @Argument(help: "The folder to write.")
    var directory: String

    @Argument(help: "Export only the entries of these manifests.")
    var manifests: [String] = []

    @OptionGroup(title: "Cache") var cache: CacheOptions

    func run() async throws {
        let cacheDirectory = try cache.existing()
        let urls = manifests.isEmpty ? nil : Set(try loadManifests(manifests).entries.map(\.url))
        let exporter = Exporter(cacheDirectory: cacheDirectory)
        let result: Exporter.Result
        do {
            result = try exporter.export(layout: layout, to: directory, urls: urls)
        } catch {
            throw cacheExitCode(error)
        }
        let files = result.linked + result.copied + result.unchanged
        let shared = result.entries == files ? "" : "\(result.entries) entries as "
        Console.out("exported \(shared)\(files) file\(files == 1 ? "" : "s") to \(directory) "
                    + "(\(result.linked) linked, \(result.copied) copied, \(result.unchanged) already there)\n")
        for url in result.missing.prefix(20) { Console.error("not cached: \(url)") }
        if !result.missing.isEmpty { throw ExitCode(ExitStatus.failures) }
    }
}
