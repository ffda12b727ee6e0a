/// Plan items that want the same content: the first URL that delivers it is downloaded, the
/// others reuse the object. Hashless entries, and every entry under `--refresh`, are groups of one.
struct DownloadGroup: Sendable {
    /// A plan item and what to send for it.
    struct Member: Sendable {
        let item: Int
        let request: FetchRequest
    }

    /// One per plan item, in manifest order: tried in that order until one delivers.
    let members: [Member]

    /// Plan item numbers, in manifest order.
    var items: [Int] { members.map(\.item) }
}
