import FoundationEssentials
import WorkerManifest
import WorkerStore

/// Where a URL the cache knows is fetched from: the rewrite rules, and one access of each
/// registered kind (`KindAccess`), which says how its URLs are reached (an `s3://` URL becomes
/// its endpoint's URL with the run's signing; an `oci://` blob its registry's API URL with the
/// registry's token). http(s) and files are requested where `--rewrite` sends them. A
/// `FetchRequest` holds the resulting locations; everything after (the breaker, the window,
/// retries, resume, rate limits) works on them alike.
public struct Locator: Sendable, Equatable {
    public var rewrite = URLRewrite()
    /// The command line's options of the registered kinds, by long name (`plain-http`): each
    /// kind reads its own.
    public var options: [String: String] = [:] {
        didSet { accesses = accesses.map { $0.with(options: options) } }
    }
    /// One access per registered kind, in their order.
    private var accesses: [any KindAccess]
    /// The kinds configured already (`configuring`).
    private var configured: Set<URLKindID> = []

    public init() {
        accesses = KindAccesses.all
    }

    public static func == (left: Locator, right: Locator) -> Bool {
        left.rewrite == right.rewrite && left.options == right.options && left.configured == right.configured
            && left.accesses.count == right.accesses.count
            && zip(left.accesses, right.accesses).allSatisfy { $0.isSame(as: $1) }
    }

    /// This locator with the settings of each kind of `kinds` read from `environment` (once a
    /// kind); a setting that cannot be read is an error (exit 2).
    public func configuring(
        _ kinds: Set<URLKindID>,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(KindSettingsProblem) -> Locator {
        var locator = self
        for (position, access) in accesses.enumerated() where kinds.contains(access.kind.id) && !configured.contains(access.kind.id) {
            do throws(KindSettingsProblem) {
                locator.accesses[position] = try access.configured(environment: environment)
            } catch {
                var named = error
                named.scheme = access.kind.schemes.first ?? access.kind.id.name
                throw named
            }
            locator.configured.insert(access.kind.id)
        }
        return locator
    }

    /// The access of the kind `id`, nil for http(s), files and a kind not registered.
    private func access(_ id: URLKindID) -> (any KindAccess)? {
        accesses.first { $0.kind.id == id }
    }

    /// Where `listed` is fetched (`Route`): its location after `--rewrite` and its kind, and —
    /// pinned by `expected`, the hash its bytes must have (a tag's layer is the blob of that
    /// digest) — the locations of its `mirrors` that request another URL. `memo`: the origin of
    /// the URL routed before, given again for one on the same authority.
    public func route(_ listed: String, mirrors: [String] = [], expected: ContentHash?, memo: inout OriginMemo) -> Route {
        guard !LocalFile.isLocal(listed) else { return .local }
        let first = locate(listed, expected: expected, memo: &memo)
        var located: [FetchLocation] = []
        if expected != nil, !mirrors.isEmpty {
            var seen: Set<String> = [first.location.url]
            for mirror in mirrors {
                let location = locate(mirror, expected: expected, memo: &memo).location
                if seen.insert(location.url).inserted { located.append(location) }
            }
        }
        return Route(origin: first.location.origin, location: first.ofKind ? first.location : nil, rule: first.rule, mirrors: located)
    }

    /// `route`, for one URL.
    public func route(_ listed: String, mirrors: [String] = [], expected: ContentHash?) -> Route {
        var memo = OriginMemo()
        return route(listed, mirrors: mirrors, expected: expected, memo: &memo)
    }

    /// The location of `listed`; whether a kind's access made it (else: an http(s) URL, and the
    /// rule it is under, nil when requested as listed).
    private func locate(
        _ listed: String, expected: ContentHash?,
        memo: inout OriginMemo
    ) -> (location: FetchLocation, ofKind: Bool, rule: Int?) {
        if !HTTPKind.matches(listed), let id = URLKinds.kind(of: listed)?.id, let access = access(id) {
            return (access.location(listed, rewrite: rewrite, origin: nil, expected: expected, memo: &memo), true, nil)
        }
        let (url, rule) = rewrite.applied(listed)
        return (FetchLocation(listed: listed, url: url, origin: memo.origin(of: url)), false, rule)
    }

    /// The locations `route` names for `listed` (the URL it was made for), the first with what
    /// its kind authorizes requests with now (a registry's current token).
    func locations(of route: Route, listed: String) -> (first: FetchLocation?, mirrors: [FetchLocation]) {
        guard let origin = route.origin else { return (nil, []) }
        let first: FetchLocation
        if let kept = route.keptLocation {
            first = authorized(kept)
        } else if let rule = route.ruleNumber {
            first = FetchLocation(listed: listed, url: rewrite.apply(listed, rule: rule), origin: origin)
        } else {
            first = FetchLocation(listed: listed, url: listed, origin: origin)
        }
        return (first, route.mirrors.map(authorized))
    }

    /// `location` with the authorization its kind gives its requests now.
    private func authorized(_ location: FetchLocation) -> FetchLocation {
        guard !HTTPKind.matches(location.listed), let id = URLKinds.kind(of: location.listed)?.id, let access = access(id) else {
            return location
        }
        return access.authorized(location, rewrite: rewrite)
    }

    /// This locator with what the kinds of `urls` must ask before their requests (a registry's
    /// token); what could not be had is said in `problems`.
    public func authorizing(
        _ urls: [String], store: ContentStore, settings: FetchSettings,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) async -> (Locator, problems: [String]) {
        var byKind: [URLKindID: [String]] = [:]
        for url in urls where !HTTPKind.matches(url) {
            if let id = URLKinds.kind(of: url)?.id, access(id) != nil { byKind[id, default: []].append(url) }
        }
        var locator = self
        var problems: [String] = []
        for (position, access) in accesses.enumerated() {
            guard let listed = byKind[access.kind.id] else { continue }
            let asked = await access.authorizing(listed, store: store, settings: settings, environment: environment)
            locator.accesses[position] = asked.access
            problems += asked.problems
        }
        return (locator, problems)
    }

    /// The parts each of `urls` stands for (`URLKind.expands`: a tag's layers), by URL; what
    /// could not be had is said, after the URL, as the failure. (`mirrors`: where else each URL
    /// may be read, as the manifest's mirrors give it.) `locator`: this one with what the kinds
    /// asked while reading them (a registry's token, how it is reached), for the run's requests.
    public func parts(
        of urls: [String], mirrors: [String: [String]] = [:], store: ContentStore, settings: FetchSettings
    ) async
        -> (results: [String: Result<[ManifestSet.Part], ManifestSet.PartsProblem>], locator: Locator)
    {
        var byKind: [URLKindID: [String]] = [:]
        var results: [String: Result<[ManifestSet.Part], ManifestSet.PartsProblem>] = [:]
        for url in urls {
            if let id = URLKinds.kind(of: url)?.id, access(id) != nil {
                byKind[id, default: []].append(url)
            } else {
                results[url] = .failure(ManifestSet.PartsProblem("\(url): stands for no other files"))
            }
        }
        var locator = self
        for (position, access) in accesses.enumerated() {
            guard let listed = byKind[access.kind.id] else { continue }
            let read = await access.parts(of: listed, mirrors: mirrors, store: store, settings: settings)
            results.merge(read.results) { first, _ in first }
            locator.accesses[position] = read.access
        }
        return (results, locator)
    }

    /// When what its kinds asked must be asked again (monotonic seconds: 30 s before a
    /// registry's first token expires); nil when nothing expires.
    public var renewBy: Double? { accesses.compactMap(\.renewBy).min() }

    /// This locator without what its kinds asked before their requests (to ask again: a
    /// registry's tokens that expire).
    public var unauthorized: Locator {
        var locator = self
        locator.accesses = accesses.map(\.unauthorized)
        return locator
    }

    /// The access of `url`'s kind, for what only that kind does (its listing); nil for http(s),
    /// files and a kind not registered.
    public func access(of url: String) -> (any KindAccess)? {
        URLKinds.kind(of: url).flatMap { access($0.id) }
    }

    /// Where `listed` would be requested without `--rewrite`: where its kind sends it (an
    /// `s3://` URL's endpoint URL, a registry's API URL), else `listed` itself.
    public func beforeRewrite(_ listed: String) -> [String] {
        guard !HTTPKind.matches(listed), let id = URLKinds.kind(of: listed)?.id, let access = access(id) else { return [listed] }
        return access.beforeRewrite(listed)
    }
}
