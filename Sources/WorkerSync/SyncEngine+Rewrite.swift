import WorkerFetch
import WorkerManifest
import WorkerReport
import WorkerStore
import WorkerSupport

/// `--rewrite` looked at before any request: which rules no location of the run is under (a
/// typo in FROM would otherwise send every request to the public host, exit 0), and with
/// `--rewrite-strict` the locations no rule covers and no `--allow-origin` allows, refused whole.
extension SyncEngine {
    /// The run's `rewrite` report object, or why a strict run may not start.
    static func checkRewrite(_ manifests: ManifestSet, locator: Locator) -> Result<SyncReport.Rewrite?, SyncFailure> {
        let rewrite = locator.rewrite
        guard !rewrite.rules.isEmpty || rewrite.strict else { return .success(nil) }
        var matched = Set<Int>()
        var refused: [String] = []
        var seen = Set<Origin>()
        func look(_ listed: String) {
            guard !LocalFile.isLocal(listed) else { return }
            // An `s3://` FROM covers the URL itself; else its endpoint or its own URL is looked at.
            if let number = rewrite.rule(for: listed) {
                matched.insert(number)
                return
            }
            let locations = locator.beforeRewrite(listed)
            if let number = locations.lazy.compactMap({ rewrite.rule(for: $0) }).first {
                matched.insert(number)
            } else if !locations.contains(where: rewrite.mayRequest), refused.count < 20, seen.insert(Origin.of(locations[0])).inserted {
                refused.append(Redact.url(listed))
            }
        }
        let entries = manifests.entries
        for position in entries.indices {
            look(entries.url(at: position))
            let mirrors = manifests.manifests[entries.manifest(at: position)].mirrors.of(entries[position])
            for mirror in mirrors { look(mirror) }
        }
        if !refused.isEmpty {
            return .failure(
                .rewriteRefused(
                    "no rule covers " + refused.joined(separator: ", ")
                        + " (one URL of each origin; add a --rewrite rule for it, or --allow-origin for an origin it may reach)"))
        }
        let unmatched = rewrite.rules.indices.filter { !matched.contains($0) }.map { Redact.url(rewrite.rules[$0].from) }
        return .success(SyncReport.Rewrite(strict: rewrite.strict, rules: rewrite.rules.count, unmatched: unmatched))
    }
}
