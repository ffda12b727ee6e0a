import ArgumentParser
import WorkerSync

/// What a sync does with the entries it is given: fetch again, revalidate, stay offline, prune.
struct SelectionOptions: ParsableArguments {
    @Flag(
        help:
            "Download and verify every selected entry again, whatever the index says (a changed body is updated, the same body unchanged).")
    var refresh = false

    @Flag(
        name: .customLong("refresh-unpinned"),
        help:
            "Download every entry without a hash again, in full, and fetch remote manifests afresh: for a cache restored from somewhere this run cannot vouch for."
    )
    var refreshUnpinned = false

    @Flag(help: "Check entries without a hash with conditional requests (ETag / Last-Modified); 304 = unchanged.")
    var revalidate = false

    @Flag(help: "No network: report what is missing or out of date (exit 1 if anything is).")
    var offline = false

    @Flag(help: "Remove cache entries no given manifest names.")
    var prune = false

    @Option(name: .customLong("prune-max"), help: "Never prune more than this share of the cache in one run (0% to 100%).")
    var pruneMax = Percentage(value: 0.5, text: "50%")

    @Flag(help: "Lift the --prune-max safety limit.")
    var force = false

    @Option(name: .customLong("prune-after"), help: "Prune only entries no manifest has named for this long (grace period, e.g. 3d).")
    var pruneAfter = Seconds(0)

    func apply(to options: inout SyncOptions) {
        options.prune = prune
        options.pruneMax = pruneMax.value
        options.force = force
        options.pruneAfter = pruneAfter.value
        options.revalidate = revalidate
        options.refresh = refresh
        options.refreshUnpinned = refreshUnpinned
        options.offline = offline
    }
}
