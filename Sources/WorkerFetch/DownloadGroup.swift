/// Plan items that want the same content: the first URL that delivers it is downloaded, the
/// others reuse the object. Hashless entries, and every entry under `--refresh`, are groups of one.
package struct DownloadGroup: Sendable {
    /// A plan item and what to send for it.
    package struct Member: Sendable {
        package let item: Int
        package let request: FetchRequest

        package init(item: Int, request: FetchRequest) {
            self.item = item
            self.request = request
        }
    }

    /// One per plan item, in manifest order: tried in that order until one delivers.
    package let members: [Member]

    package init(members: [Member]) {
        self.members = members
    }

    /// Plan item numbers, in manifest order.
    package var items: [Int] { members.map(\.item) }
}
