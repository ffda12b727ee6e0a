import ArgumentParser
import CurlTransport
import FoundationEssentials
import Glibc
import WorkerFetch
import WorkerLifecycle
import WorkerManifest
import WorkerReport
import WorkerSupport
import WorkerSync

/// `worker verify [--repair]`: re-hash every object and cross-check the index both ways.
struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Re-hash every object and check the index against the files, both ways.",
        discussion: """
            Reports corrupt objects (bytes that do not hash to their name), index rows whose object is \
            missing, objects no row names, and anything else found under objects/. With --repair, \
            deletes what is wrong, downloads the URLs of broken rows again (checked against their \
            hash; no manifest headers are sent), and drops rows that cannot be fetched, and URLs with no hash \
            to check them against — the next sync of their manifest adds them back. Local files are \
            read again only from the folders of the MANIFESTs given. Exit 0: the cache is \
            consistent (after repair); 1: problems found and not repaired.

            Examples:
              worker verify
              worker verify --repair -j 4
              worker verify --repair manifests/site.yaml
              worker verify --report verify.json --quiet
            """)

    @OptionGroup(title: "Cache") var cache: CacheOptions

    @Argument(help: "With --repair: manifests whose folders local entries may be read again from.")
    var manifests: [String] = []

    @Option(name: [.short, .customLong("jobs")], help: "Files hashed (and, with --repair, downloaded) at once.")
    var jobs = 4

    @Option(name: .customLong("report"), help: "Write the findings as JSON to this file.")
    var reportPath: String?

    @Flag(name: [.short, .customLong("quiet")], help: "Print nothing on stdout.")
    var quiet = false

    @Flag(help: "Fix what is found: delete bad files, re-download or drop broken entries.")
    var repair = false

    @Option(help: "Extra attempts for transient failures when --repair downloads again.")
    var retries = 3

    @Option(name: .customLong("ca-cert"), help: "A PEM file of certificate authorities to trust besides the system's (repeatable).")
    var caCertificates: [String] = []

    @Option(
        name: .customLong("rewrite"),
        help: ArgumentHelp(
            "With --repair: fetch URLs starting with FROM from TO + the rest (repeatable; also $WORKER_REWRITE).",
            valueName: "FROM=TO"))
    var rewrite: [String] = []

    @OptionGroup(title: "Kinds of URL") var kinds: KindOptions

    @OptionGroup(title: "Signed and remote manifests") var trust: ManifestTrustOptions

    @OptionGroup var lock: LockOptions

    func validate() throws {
        guard repair || manifests.isEmpty else { throw ValidationError("manifests are read only with --repair") }
    }

    func run() async throws {
        var fetch = FetchSettings()
        fetch.transport = CurlTransport()
        fetch.jobs = max(1, jobs)
        fetch.retry = RetryPolicy(retries: retries)
        fetch.caCertificates = caCertificates
        fetch.locator.options = kinds.options
        fetch.locator.rewrite = try optionChecked(for: Self.self) { try NetworkOptions.rewrite(self.rewrite) }
        // Checked like any manifest (exit 2 with file:line:column; signed ones verified, remote
        // ones fetched, where --rewrite sends them) before the cache is used.
        let manifestPaths =
            manifests.isEmpty
            ? []
            : try await openManifests(
                manifests, cacheDirectory: cache.resolved, trust: try trust.trust(), fetch: fetch,
                expandsHeaders: false
            ).opened.paths
        let directory = try cache.existing()
        try checkOutputs(reportPath.map { [(format: VerifyReportFormat(), path: $0)] } ?? [], manifests: manifests)
        var verifier = CacheVerifier(cacheDirectory: directory, context: .command())
        verifier.fetch = fetch
        verifier.waitLock = lock.seconds()
        verifier.manifestPaths = manifestPaths
        let report: VerifyReport
        do {
            report = try await verifier.verify(repair: repair)
        } catch {
            throw error
        }
        if !quiet { Console.out(Self.describe(report)) }
        if let path = reportPath {
            do {
                try AtomicFile.write(Console.json(report), to: path)
            } catch {
                throw CommandFailure.outputFailed("cannot write the report: \(ErrorText.describe(error))")
            }
        }
        if !report.isClean && !report.repaired { throw CommandFailure.unfinished([]) }
    }

    static func describe(_ report: VerifyReport) -> String {
        var lines = ["worker verify: \(report.objectsChecked) objects, \(Units.formatBytes(report.bytesChecked)) re-hashed"]
        let groups: [(String, [String])] = [
            ("corrupt object", report.corruptObjects), ("entry without its object", report.missingObjects),
            ("damaged index row", report.damagedRows), ("index row with the wrong size", report.sizeMismatches),
            ("stray file", report.strayFiles),
        ]
        for (label, items) in groups where !items.isEmpty {
            lines.append("  \(items.count) \(label)\(items.count == 1 ? "" : "s")")
            for item in items.prefix(10) { lines.append("    \(item)") }
            if items.count > 10 { lines.append("    … and \(items.count - 10) more") }
        }
        if !report.unreferencedObjects.isEmpty {
            let count = report.unreferencedObjects.count
            lines.append(
                "  \(count) object\(count == 1 ? "" : "s") no entry names (left by an interrupted run; "
                    + "\(report.repaired ? "removed" : "the next sync or gc removes them"))")
        }
        if report.temporaryFiles > 0 { lines.append("  removed \(report.temporaryFiles) temporary files left by a crashed run") }
        if let damage = report.indexDamage {
            lines.append(
                "  the index is damaged (SQLite: \(Sanitize.terminal(damage, limit: 200))); it cannot be repaired: "
                    + "`worker clear` deletes it with every object, and the next sync downloads everything again")
        }
        if report.isClean { lines.append("  the cache and its index agree") }
        if report.repaired && !report.isClean {
            lines.append(
                "  repaired: deleted \(report.deletedFiles) files, downloaded \(report.redownloaded.count) again, dropped \(report.droppedEntries.count) entries"
            )
        } else if !report.isClean && report.indexDamage == nil {
            lines.append("  run `worker verify --repair` to fix")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
