import WorkerFetch
import WorkerManifest
import WorkerStore

extension SyncPlan {
    /// The items that need the network (download, revalidate, refresh), grouped by content in
    /// the order their first item comes in the manifests.
    public func downloadGroups(refresh: Bool, locator: Locator = Locator()) -> [DownloadGroup] {
        let entries = manifests.entries
        /// What makes an item's group, made only when two items' fingerprints meet.
        func key(_ item: Int) -> GroupKey {
            if !refresh, let hash = entries.hash(at: item) { return .content(hash) }
            return .url(entries.url(at: item))
        }
        /// Each group's first item, in order; the other items of the few groups that have any.
        var firsts: [Int] = []
        var others: [Int: [Int]] = [:]
        /// Groups by 64 bits of their key (no string or whole hash kept per group: at a million
        /// entries a map keyed by `GroupKey` was 160 MB); keys whose fingerprint another group has
        /// are kept whole.
        var byFingerprint: [UInt64: Int] = [:]
        var byKey: [GroupKey: Int] = [:]
        // Items are made only for the entries that need the network (a warm run: none).
        for offset in items.indices where action(at: offset).needsNetwork {
            let fingerprint =
                (!refresh ? entries.hash(at: offset)?.withDigest(Self.fingerprint) : nil)
                ?? entries.withURL(at: offset, URLPositions.digest64)
            if let group = byFingerprint[fingerprint] {
                let mine = key(offset)
                if key(firsts[group]) == mine {
                    others[group, default: []].append(offset)
                    continue
                }
                if let group = byKey[mine] {
                    others[group, default: []].append(offset)
                    continue
                }
                byKey[mine] = firsts.count
            } else {
                byFingerprint[fingerprint] = firsts.count
            }
            firsts.append(offset)
        }
        // One object per origin, shared by every group of it.
        var origins: [Origin: Origin] = [:]
        var groups: [DownloadGroup] = []
        groups.reserveCapacity(firsts.count)
        var memo = OriginMemo()
        for (number, first) in firsts.enumerated() {
            let entry = entries[first]
            // The one place an item is located: its route goes with the group to its requests.
            var route = locator.route(
                entry.url, mirrors: manifests.manifests[entry.manifest].mirrors.of(entry), expected: entry.hash,
                memo: &memo)
            if let origin = route.origin {
                if let known = origins[origin] {
                    route = route.with(origin: known)
                } else {
                    origins[origin] = origin
                }
            }
            groups.append(
                DownloadGroup(
                    items: GroupItems(first: first, others: others[number] ?? []), route: route,
                    pinnedBySHA256: route.origin != nil && entry.hash?.algorithm == .sha256))
        }
        return groups
    }

    /// The first 8 bytes of a digest (every algorithm's is at least 16).
    private static func fingerprint(_ digest: UnsafeRawBufferPointer) -> UInt64 {
        digest.loadUnaligned(as: UInt64.self)
    }

    /// What makes items one group: the same expected content, or (hashless, `--refresh`) the
    /// same URL. The hash itself, not its text: no string made per entry.
    private enum GroupKey: Hashable {
        case content(ContentHash)
        case url(String)
    }

    /// What to send for a plan item: its manifest's headers, the stored version's validators when
    /// it is revalidated, its mirrors; where `--rewrite` sends it (`route`: where it is fetched,
    /// when known: a download group's; else `locator` works it out).
    public func request(for item: Int, locator: Locator = Locator(), route: Route? = nil) -> FetchRequest {
        let planned = self.item(at: item)
        // The manifest's fields read one by one: a copy of the whole manifest a request is a
        // dozen retains.
        let number = planned.entry.manifest
        let revalidate = planned.action == .revalidate
        return FetchRequest(
            url: planned.entry.url, expected: planned.entry.hash, headers: manifests.manifests[number].headers,
            localRoot: manifests.manifests[number].baseURL == nil ? manifests.manifests[number].localRoot : nil,
            etag: revalidate ? planned.previous?.etag : nil,
            lastModified: revalidate ? planned.previous?.lastModified : nil,
            mirrors: route == nil ? manifests.manifests[number].mirrors.of(planned.entry) : [], locator: locator,
            route: route)
    }

    /// Whether a request for the item would carry credentials (`FetchRequest.carriesCredentials`):
    /// its manifest's headers, user info in its URL, or what its kind signs or logs in with.
    public func carriesCredentials(_ item: Int, locator: Locator) -> Bool {
        let entry = manifests.entries[item]
        if !manifests.manifests[entry.manifest].headers.isEmpty || CredentialFreeURL.hasUserInfo(entry.url) { return true }
        return !HTTPKind.matches(entry.url) && locator.access(of: entry.url) != nil
            && request(for: item, locator: locator).carriesCredentials
    }
}
