import ArgumentParser
import FoundationEssentials
import Glibc
import WorkerLifecycle
import WorkerManifest
import WorkerStore

/// `worker export --layout LAYOUT DIR [MANIFEST…]`: the cache in an app library's layout.
struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write cached files into DIR in an app library's layout (hard links where possible).",
        discussion: TreeLayout.allCases.map { "\($0.rawValue): \($0.summary)." }.joined(separator: " ") + """
             With manifests, only their entries are exported. From the cache alone: nothing is \
            downloaded. `sync --tree DIR --layout LAYOUT` publishes the same layouts.

            Into a folder, an export removes the files an earlier export wrote there that this one \
            no longer names (it lists what it wrote in DIR/.worker-export), only while each is still \
            what it made, and no other file; it never writes or deletes through a link under DIR (a \
            link where a folder goes is refused, exit 2). With --atomic, DIR is a link switched at \
            once to a complete new version beside it.

            Examples:
              worker export --layout tree --atomic /srv/www/avatars manifests/avatars.yaml
              worker export --layout sdwebimage ./Bundle/Avatars manifests/demo.yaml
              worker export --layout kingfisher ./Caches/Kingfisher
              worker export --layout hash /srv/static/by-hash
            """)

    @Option(help: "\(TreeLayout.names).")
    var layout: TreeLayout

    @Flag(help: "Publish DIR as a link switched at once to a complete new version (readers never see a mix).")
    var atomic = false

    @Argument(help: "The folder to write.")
    var directory: String

    @Argument(help: "Export only the entries of these manifests.")
    var manifests: [String] = []

    @OptionGroup(title: "Cache") var cache: CacheOptions

    @OptionGroup(title: "Signed and remote manifests") var trust: ManifestTrustOptions

    @OptionGroup(title: "Network (for a remote manifest, an artifact's tag)") var network: NetworkOptions

    @OptionGroup var lock: LockOptions

    func validate() throws {
        if layout == .tree, manifests.isEmpty {
            throw ValidationError("the tree layout needs the manifests that name each file's path")
        }
    }

    func run() async throws {
        let cacheDirectory = try cache.existing()
        let set =
            manifests.isEmpty
            ? nil
            : try await openManifests(
                manifests, cacheDirectory: cacheDirectory, trust: try trust.trust(),
                fetch: try network.settings(for: Self.self), tree: layout == .tree
            ).set
        let urls = set.map { Set($0.entries.map(\.url)) }
        let tree = layout == .tree ? set.map { set in set.tree.map { (path: $0.path, url: set.entries[$0.entry].url) } } : nil
        let exporter = Exporter(cacheDirectory: cacheDirectory)
        let result: Exporter.Result
        do {
            let stop = StopSignals.enable { Console.notice("worker: " + $0) }
            result = try await exporter.export(
                layout: layout, to: directory, urls: urls, tree: tree, atomic: atomic,
                wait: lock.seconds(), context: .command(stop: stop))
        } catch {
            throw error
        }
        if let outcome = result.tree {
            Console.out(
                "exported \(outcome.files) file\(outcome.files == 1 ? "" : "s") to \(directory) "
                    + (outcome.switched
                        ? "(switched to \(outcome.version): \(outcome.linked) linked, \(outcome.copied) copied)\n"
                        : "(unchanged, nothing switched)\n"))
        } else {
            let files = result.linked + result.copied + result.unchanged
            let shared = result.entries == files ? "" : "\(result.entries) entries as "
            let removed = result.removed > 0 ? ", \(result.removed) an earlier export wrote removed" : ""
            Console.out(
                "exported \(shared)\(files) file\(files == 1 ? "" : "s") to \(directory) "
                    + "(\(result.linked) linked, \(result.copied) copied, \(result.unchanged) already there\(removed))\n")
        }
        if !result.missing.isEmpty { throw CommandFailure.unfinished(result.missing.prefix(20).map { "not cached: \($0)" }) }
    }
}
