import WorkerManifest

/// Plan items that want the same content: the first URL that delivers it is downloaded, the
/// others reuse the object. Hashless entries, and every entry under `--refresh`, are groups of one.
/// A group holds what the queue schedules it by and its first member's route, not its requests:
/// those are made as its members start (a million-entry run does not hold a million of them).
public struct DownloadGroup: Sendable {
    /// The items after the first (most groups have none: no allocation).
    private let others: [Int]
    /// Where the first item is fetched, worked out when the plan was grouped.
    public let route: Route
    /// The first item (beside the flag: a group is 40 bytes, and a million-entry run holds a
    /// million groups).
    private let first: Int32
    /// Whether the first item is pinned by SHA-256 on an origin: the shared tier may have it.
    public let pinnedBySHA256: Bool

    /// Plan item numbers, in manifest order: tried in that order until one delivers.
    public var items: GroupItems { GroupItems(first: Int(first), others: others) }

    /// The first item's origin; nil for a local file.
    public var origin: Origin? { route.origin }

    public init(items: [Int], route: Route = .local, pinnedBySHA256: Bool = false) {
        self.init(items: GroupItems(items), route: route, pinnedBySHA256: pinnedBySHA256)
    }

    public init(items: GroupItems, route: Route, pinnedBySHA256: Bool = false) {
        first = Int32(items[0])
        others = items.others
        self.route = route
        self.pinnedBySHA256 = pinnedBySHA256
    }
}

/// A group's plan items: the first held inline, the others (most groups have none) in an array,
/// so a million groups of one are not a million arrays.
public struct GroupItems: RandomAccessCollection, Sendable {
    private let head: Int
    private let rest: [Int]

    /// `items` must not be empty: a group has a first item.
    public init(_ items: [Int]) {
        precondition(!items.isEmpty, "a download group has at least one item")
        head = items[0]
        rest = items.count > 1 ? Array(items.dropFirst()) : []
    }

    public init(first: Int, others: [Int]) {
        head = first
        rest = others
    }

    /// The items after the first.
    public var others: [Int] { rest }

    public var startIndex: Int { 0 }
    public var endIndex: Int { 1 + rest.count }
    public subscript(position: Int) -> Int { position == 0 ? head : rest[position - 1] }
}
