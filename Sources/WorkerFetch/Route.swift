import WorkerManifest

/// Where one plan item is fetched, worked out once (`Locator.route`): its location after
/// `--rewrite` and its kind, that location's origin, and its mirrors' locations (a pinned
/// entry's). A download group keeps its first member's route from the grouping on: the schedule,
/// the requests, the failover and the ledger read it, and none locates the entry again.
///
/// A million-entry run holds a million routes, so one names no string of its own for an http(s)
/// URL: as listed, or the number of the rule that sends it elsewhere (the requested URL is that
/// rule's TO + the rest, joined when the request is made). A kind's location (an `s3://` URL's
/// endpoint and signing) and the mirrors are kept whole, in one box that most routes lack.
public struct Route: Sendable {
    /// The origin of the first location (one object per origin, shared by its groups); nil for a
    /// local file.
    public let origin: Origin?
    /// The kind's location and the mirrors' locations; nil when there are none of either.
    private let kept: Kept?
    /// The number of the `--rewrite` rule an http(s) URL is under; -1: none (or a kind's URL,
    /// whose location is kept).
    private let rule: Int32

    private final class Kept: Sendable {
        let location: FetchLocation?
        let mirrors: [FetchLocation]

        init(location: FetchLocation?, mirrors: [FetchLocation]) {
            (self.location, self.mirrors) = (location, mirrors)
        }
    }

    /// A local file's: no location.
    public static let local = Route(origin: nil, location: nil, rule: nil, mirrors: [])

    /// `location`: a kind's, kept whole; `rule`: the rule an http(s) URL is under (nil: as listed).
    init(origin: Origin?, location: FetchLocation?, rule: Int?, mirrors: [FetchLocation]) {
        self.origin = origin
        kept = location == nil && mirrors.isEmpty ? nil : Kept(location: location, mirrors: mirrors)
        self.rule = Int32(rule ?? -1)
    }

    /// This route with `origin` for its own (the same origin, as the object the caller shares).
    public func with(origin shared: Origin) -> Route {
        Route(origin: shared, kept: kept, rule: rule)
    }

    private init(origin: Origin?, kept: Kept?, rule: Int32) {
        (self.origin, self.kept, self.rule) = (origin, kept, rule)
    }

    /// The mirrors' locations, in order (after the first location; none that requests the same URL).
    public var mirrors: [FetchLocation] { kept?.mirrors ?? [] }

    /// The origins of the mirrors, in order.
    var mirrorOrigins: [Origin] { kept?.mirrors.map(\.origin) ?? [] }

    /// A kind's location, kept whole.
    var keptLocation: FetchLocation? { kept?.location }

    /// The rule an http(s) URL is under, nil when it is requested as listed.
    var ruleNumber: Int? { rule < 0 ? nil : Int(rule) }
}
