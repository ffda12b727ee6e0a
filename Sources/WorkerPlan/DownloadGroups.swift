import WorkerFetch
import WorkerManifest
import WorkerStore

extension SyncPlan {
    /// The items that need the network (download, revalidate, refresh), grouped by content in
    /// the order their first item comes in the manifests.
    package func downloadGroups(refresh: Bool, locator: Locator = Locator()) -> [DownloadGroup] {
        var groupByKey: [GroupKey: Int] = [:]
        var members: [[Int]] = []
        for (offset, item) in items.enumerated() {
            switch item.action {
            case .keep, .reuse:
                continue
            case .download, .revalidate, .refresh, .repair:
                let key = refresh ? GroupKey.url(item.entry.url) : item.entry.hash.map(GroupKey.content) ?? .url(item.entry.url)
                if let existing = groupByKey[key] {
                    members[existing].append(offset)
                } else {
                    groupByKey[key] = members.count
                    members.append([offset])
                }
            }
        }
        return members.map { items in DownloadGroup(members: items.map { .init(item: $0, request: request(for: $0, locator: locator)) }) }
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
    /// it is revalidated, its mirrors; where `--rewrite` sends it.
    func request(for item: Int, locator: Locator = Locator()) -> FetchRequest {
        let planned = items[item]
        let manifest = manifests.manifests[planned.entry.manifest]
        let revalidate = planned.action == .revalidate
        return FetchRequest(url: planned.entry.url, expected: planned.entry.hash, headers: manifest.headers,
                            localRoot: manifest.baseURL == nil ? manifest.localRoot : nil,
                            etag: revalidate ? planned.previous?.etag : nil,
                            lastModified: revalidate ? planned.previous?.lastModified : nil,
                            mirrors: manifest.mirrors(of: planned.entry), locator: locator)
    }
}
