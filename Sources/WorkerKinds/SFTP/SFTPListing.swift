/// One folder's listing as libcurl's SFTP gives it: a line a name, as the server writes it for
/// `ls -l` (OpenSSH: `-rw-r--r--    1 user  group   1234 Dec  3 08:47 name`; libcurl adds
/// ` -> target` to a symbolic link). Sizes are exact; times are to the minute, so the lister asks
/// each file's own time.
struct SFTPListing: Equatable {
    enum Kind: Equatable { case file, folder, link, other }

    struct Item: Equatable {
        let name: String
        let kind: Kind
        let size: Int64
    }

    var items: [Item] = []

    /// The lines of `text`; a line that is not of that form is left out, as are `.` and `..`.
    static func parse(_ text: String) -> SFTPListing {
        var listing = SFTPListing()
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            let line = line.hasSuffix("\r") ? line.dropLast() : line
            // Mode, links, user, group, size, and the date's three fields; then the name.
            var rest = Substring(line)
            var fields: [Substring] = []
            while fields.count < 8 {
                rest = rest.drop { $0 == " " }
                let field = rest.prefix { $0 != " " }
                guard !field.isEmpty else { break }
                fields.append(field)
                rest = rest[field.endIndex...]
            }
            guard fields.count == 8, rest.first == " ", let size = Int64(fields[4]), let type = fields[0].first else { continue }
            var name = String(rest.dropFirst())
            let kind: Kind
            switch type {
            case "-": kind = .file
            case "d": kind = .folder
            case "l":
                kind = .link
                if let arrow = name.firstRange(of: " -> ") { name = String(name[..<arrow.lowerBound]) }
            default: kind = .other
            }
            guard !name.isEmpty, name != ".", name != "..", !name.contains("/") else { continue }
            listing.items.append(Item(name: name, kind: kind, size: size))
        }
        return listing
    }
}
