import FoundationEssentials
import WorkerManifest
import WorkerStore

/// Where a URL the cache knows is fetched from: the one place the fetch stage tells a URL's kind.
/// An `s3://` URL becomes its endpoint's URL with the run's AWS signing; that URL, like an http(s)
/// one, goes where `--rewrite` sends it (a bucket's endpoint behind an internal proxy). A `FetchRequest` holds the resulting locations; everything after
/// (the breaker, the window, retries, resume, rate limits) works on them alike.
package struct Locator: Sendable, Equatable {
    package var rewrite = URLRewrite()
    /// How `s3://` URLs are reached: resolved from the AWS environment when a run has some
    /// (`resolvingS3`); nil before (unsigned, AWS's endpoint).
    package var s3: S3Access?
    /// How `oci://` blobs are authorized: what each registry asked for (`authorizing`).
    package var registries = RegistryAccess()

    package init() {}

    /// This locator with the AWS settings resolved from `environment` when `needed` (the run has
    /// `s3://` URLs) and not yet done; an unreadable file or a profile that is nowhere is an
    /// error (exit 2).
    package func resolvingS3(if needed: Bool,
                            environment: [String: String] = ProcessInfo.processInfo.environment) throws(CacheError) -> Locator {
        guard s3 == nil, needed else { return self }
        switch S3Access.resolve(environment: environment) {
        case .success(let access):
            var resolved = self
            resolved.s3 = access
            return resolved
        case .failure(let error):
            throw .awsSettings(error.description)
        }
    }

    /// The location `listed` is requested at (its `origin`, when the caller knows it already;
    /// `expected`, the hash its bytes must have: a tag's layer is the blob of that digest): the
    /// one place this stage gives each kind of URL its way of being reached.
    func location(_ listed: String, origin: Origin? = nil, expected: ContentHash? = nil) -> FetchLocation {
        var memo = OriginMemo()
        return location(listed, origin: origin, expected: expected, memo: &memo)
    }

    /// `memo`: the origin of the URL located before, given again for one on the same authority.
    private func location(_ listed: String, origin: Origin?, expected: ContentHash?, memo: inout OriginMemo) -> FetchLocation {
        switch URLKinds.kind(of: listed)?.id {
        case .s3?:
            // An `s3://` FROM sends the key to another bucket (signed) or to an http(s) URL (unsigned).
            let target = rewrite.apply(listed)
            guard case .success(let object) = S3URL.parse(target) else {
                return FetchLocation(listed: listed, url: target, origin: origin ?? memo.origin(of: target))
            }
            let (endpoint, signing) = (s3 ?? S3Access()).location(of: object)
            let url = rewrite.apply(endpoint)
            return FetchLocation(listed: listed, url: url, origin: origin ?? memo.origin(of: url), signing: signing)
        case .oci?:
            // An `oci://` FROM sends the blob to another registry (a pull-through cache), and
            // the registry's API URL goes where an http(s) rule sends it.
            let target = rewrite.apply(listed)
            guard let reference = OCIReference(target),
                  let digest = reference.isBlob ? reference.digest : (expected?.algorithm == .sha256 ? expected?.hex : nil)
            else { return FetchLocation(listed: listed, url: target, origin: origin ?? memo.origin(of: target)) }
            let url = rewrite.apply(registries.apiBase(of: reference) + "/blobs/sha256:" + digest)
            let grant = registries.grant(for: reference, at: url)
            return FetchLocation(listed: listed, url: url, origin: origin ?? memo.origin(of: url), authorization: grant?.value,
                                 credentialUser: grant?.user)
        case .http?, .file?, nil:
            let url = rewrite.apply(listed)
            return FetchLocation(listed: listed, url: url, origin: origin ?? memo.origin(of: url))
        }
    }

    /// This locator with what the kinds of `urls` must ask before their requests (a registry's
    /// token); what could not be had is said in `problems`.
    package func authorizing(_ urls: [String], store: ContentStore, settings: FetchSettings,
                             environment: [String: String] = ProcessInfo.processInfo.environment) async -> (Locator, problems: [String]) {
        var references: [OCIReference] = []
        for url in urls where URLKinds.kind(of: url)?.id == .oci {
            if let reference = OCIReference(rewrite.apply(url)) { references.append(reference) }
        }
        guard !references.isEmpty else { return (self, []) }
        var locator = self
        let problems: [RegistryProblem]
        (locator.registries, problems) = await registries.resolving(references, store: store, settings: settings, environment: environment)
        return (locator, problems.map(\.description))
    }

    /// The parts each of `urls` stands for (`URLKind.expands`: a tag's layers), by URL; what
    /// could not be had is said, after the URL, as the failure. (`mirrors`: where else each URL
    /// may be read, as the manifest's mirrors give it.) `locator`: this one with what the kinds
    /// asked while reading them (a registry's token, how it is reached), for the run's requests.
    package func parts(of urls: [String], mirrors: [String: [String]] = [:], store: ContentStore, settings: FetchSettings) async
        -> (results: [String: Result<[ManifestSet.Part], ManifestSet.PartsProblem>], locator: Locator) {
        var byKind: [URLKindID: [String]] = [:]
        for url in urls { if let kind = URLKinds.kind(of: url) { byKind[kind.id, default: []].append(url) } }
        var results: [String: Result<[ManifestSet.Part], ManifestSet.PartsProblem>] = [:]
        var locator = self
        for (kind, listed) in byKind {
            switch kind {
            case .oci:
                let read = await RegistryAccess.parts(of: listed, mirrors: mirrors, store: store, settings: settings)
                results.merge(read.results) { first, _ in first }
                locator.registries = read.access
            case .http, .s3, .file:
                for url in listed { results[url] = .failure(ManifestSet.PartsProblem("\(url): stands for no other files")) }
            }
        }
        return (results, locator)
    }

    /// When what its kinds asked must be asked again (monotonic seconds: 30 s before a
    /// registry's first token expires); nil when nothing expires.
    package var renewBy: Double? { registries.refreshBy }

    /// This locator without what its kinds asked before their requests (to ask again: a
    /// registry's tokens that expire).
    package var unauthorized: Locator {
        var locator = self
        locator.registries = registries.renewing
        return locator
    }

    /// Where `listed` would be requested without `--rewrite`: an `s3://` URL's endpoint URL; a
    /// registry's API URL over https, and over http for one on loopback that may not speak TLS
    /// (either may be asked); else `listed` itself.
    package func beforeRewrite(_ listed: String) -> [String] {
        switch URLKinds.kind(of: listed)?.id {
        case .s3?:
            guard case .success(let object) = S3URL.parse(listed) else { return [listed] }
            return [(s3 ?? S3Access()).location(of: object).url]
        case .oci?:
            guard let reference = OCIReference(listed) else { return [listed] }
            let path = reference.isBlob ? "/blobs/sha256:" + (reference.digest ?? "") : "/manifests/" + (reference.tag ?? "")
            let api = registries.apiBase(of: reference) + path
            guard reference.origin.host == "localhost", api.hasPrefix("https://") else { return [api] }
            return [api, "http://" + api.dropFirst("https://".count)]
        case .http?, .file?, nil:
            return [listed]
        }
    }

    /// The origin `listed` is requested from; nil for a local file.
    package func origin(of listed: String) -> Origin? {
        LocalFile.isLocal(listed) ? nil : location(listed).origin
    }

    /// The origin `listed` is requested from, for a loop over many URLs: `memo` keeps the last
    /// one's, given again (the same object) for a URL on the same authority.
    package func origin(of listed: String, memo: inout OriginMemo) -> Origin? {
        LocalFile.isLocal(listed) ? nil : location(listed, origin: nil, expected: nil, memo: &memo).origin
    }
}
