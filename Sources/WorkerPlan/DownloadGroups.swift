import WorkerFetch
import WorkerManifest
import WorkerStore

extension SyncPlan {
    /// The items that need the network (download, revalidate, refresh), grouped by content in
    /// the order their first item comes in the manifests.
    package func downloadGroups(refresh: Bool, locator: Locator = Locator()) -> [DownloadGroup] {
        var groupByKey: [GroupKey: Int] = [:]
        var members: [[Int]] = []
        // Items are made only for the entries that need the network (a warm run: none).
        for offset in items.indices {
            switch action(at: offset) {
            case .keep, .reuse:
                continue
            case .download, .revalidate, .refresh, .repair:
                let item = items[offset]
                let key = refresh ? GroupKey.url(item.entry.url) : item.entry.hash.map(GroupKey.content) ?? .url(item.entry.url)
                if let existing = groupByKey[key] {
                    members[existing].append(offset)
                } else {
                    groupByKey[key] = members.count
                    members.append([offset])
                }
            }
        }
        // One string per origin, shared by every group of it.
        var origins: [String: String] = [:]
        func shared(_ origin: String?) -> String? {
            guard let origin else { return nil }
            if let known = origins[origin] { return known }
            origins[origin] = origin
            return origin
        }
        return members.map { items in
            let first = items[0]
            let entry = self.items[first].entry
            let origin = shared(locator.origin(of: entry.url))
            let mirrors = origin == nil || entry.hash == nil ? [] : manifests.manifests[entry.manifest].mirrors(of: entry)
            return DownloadGroup(items: items, origin: origin, mirrorOrigins: mirrors.compactMap { shared(locator.origin(of: $0)) },
                                 pinnedBySHA256: origin != nil && entry.hash?.algorithm == .sha256)
        }
    }

    /// What makes items one group: the same expected content, or (hashless, `--refresh`) the
    /// same URL. The hash itself, not its text: no string made per entry.
    private enum GroupKey: Hashable {
        case content(ContentHash)
        case url(String)
    }

    /// Whether a plan item is fetched with credentials (its manifest's headers, URL user info).
    package func carriesCredentials(_ item: Int) -> Bool {
        let planned = items[item]
        return !manifests.manifests[planned.entry.manifest].headers.isEmpty || CredentialFreeURL.hasUserInfo(planned.entry.url)
    }

    /// What to send for a plan item: its manifest's headers, the stored version's validators when
    /// it is revalidated, its mirrors; where `--rewrite` sends it (`origin`: its origin, when known).
    package func request(for item: Int, locator: Locator = Locator(), origin: String? = nil) -> FetchRequest {
        let planned = items[item]
        let manifest = manifests.manifests[planned.entry.manifest]
        let revalidate = planned.action == .revalidate
        return FetchRequest(url: planned.entry.url, expected: planned.entry.hash, headers: manifest.headers,
                            localRoot: manifest.baseURL == nil ? manifest.localRoot : nil,
                            etag: revalidate ? planned.previous?.etag : nil,
                            lastModified: revalidate ? planned.previous?.lastModified : nil,
                            mirrors: manifest.mirrors(of: planned.entry), locator: locator, origin: origin)
    }
}
