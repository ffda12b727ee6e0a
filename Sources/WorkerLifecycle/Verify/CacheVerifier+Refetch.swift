import FoundationEssentials
import Logging
import WorkerFetch
import WorkerManifest
import WorkerStore
import WorkerSupport

/// `verify --repair`'s downloads: the rows whose objects are gone, fetched again against their hash.
extension CacheVerifier {
    /// Downloads the rows whose objects are gone again (no manifest headers are known here);
    /// a row that cannot be fetched is dropped, and the next sync of its manifest adds it back.
    /// `locator`: the run's, with the settings of the kinds of `broken` read.
    func refetch(
        _ broken: [IndexRecord], store: ContentStore, index: CacheIndex, locator: Locator,
        report: inout VerifyReport
    ) async throws(VerifyFailure) {
        guard !broken.isEmpty else { return }
        // A local entry is read again only from inside the folder of a manifest given to this
        // command (the same confinement as `sync`); any other local row is dropped.
        let folders = manifestPaths.map { URLResolver(manifestPath: $0).folder }
        let network = broken.contains { !LocalFile.isLocal($0.url) }
        var locator = locator
        // What the kinds of these URLs ask before their requests (a registry's token).
        if network {
            let problems: [String]
            (locator, problems) = await locator.authorizing(broken.map(\.url), store: store, settings: fetch)
            for problem in problems { logger.warning("\(problem)") }
        }
        let fetcher: Fetcher
        do throws(EngineStartFailure) {
            fetcher = try Fetcher(store: store, settings: fetch, logger: logger, network: network, knownFolders: folders)
        } catch {
            throw .engines(error)
        }
        var batch = BatchCommit(store: store)
        var dropped: [String] = []
        for record in broken {
            // The hash the row was verified against. A row whose hash does not parse, or a network
            // row without one, is dropped rather than fetched without a check (the next sync of
            // its manifest adds it back); a local file without one is read again only from the
            // folder of a manifest given. So is a row keyed without its URL's user info (a shared
            // cache): it cannot be fetched.
            let expected = record.hash.flatMap(ContentHash.parseStored)
            let unchecked = expected == nil && (record.hash != nil || !LocalFile.isLocal(record.url))
            if unchecked || CredentialFreeURL.isKey(record.url) {
                dropped.append(record.url)
                report.droppedEntries.append(Redact.url(record.url))
                continue
            }
            let result = await fetcher.fetch(
                FetchRequest(
                    url: record.url, expected: expected, headers: [], localRoot: nil,
                    locator: locator))
            switch result.result {
            case .success(.notModified):
                dropped.append(record.url)
                report.droppedEntries.append(Redact.url(record.url))
            case .success(.body(let body)):
                var updated = record
                updated.object = body.sha256
                updated.size = body.size
                updated.fetchedAt = Date().timeIntervalSince1970
                batch.add(updated, installing: body.temporaryPath)
                report.redownloaded.append(Redact.url(record.url))
            case .failure:
                dropped.append(record.url)
                report.droppedEntries.append(Redact.url(record.url))
            }
        }
        await fetcher.shutdown()
        do throws(CacheError) {
            try batch.commit(index: index, removals: dropped, at: Date().timeIntervalSince1970)
        } catch {
            throw .cache(error)
        }
        if batch.markedUnclean { store.markClean() }
    }
}
