import WorkerSupport

/// Tree paths that cannot make one tree: two entries at one path (unless both are the same URL,
/// listed twice), and a file where another entry needs a folder (`a` and `a/b`). Each problem
/// names both entries. Works on the tree sorted by path (`sorted`), which the manifest set keeps:
/// one path's entries are side by side, and a folder is found by a binary search.
enum TreeConflicts {
    /// The tree in path order (by bytes, as the file system tells names apart: two spellings of
    /// `café` are two paths), entries of one path in the manifests' order.
    static func sorted(_ tree: [TreeEntry]) -> [TreeEntry] {
        tree.enumerated().sorted { a, b in
            FileName.same(a.element.path, b.element.path) ? a.offset < b.offset : FileName.precedes(a.element.path, b.element.path)
        }.map(\.element)
    }

    /// The problems of `tree` (sorted by `sorted`).
    static func find(_ tree: [TreeEntry], manifests: [Manifest]) -> [ManifestDiagnostic] {
        var diagnostics: [ManifestDiagnostic] = []
        var firstOfPath = 0
        for offset in tree.indices {
            let entry = tree[offset]
            if offset > 0, FileName.same(tree[offset - 1].path, entry.path) {
                let earlier = tree[firstOfPath]
                if earlier.entry != entry.entry {
                    diagnostics.append(
                        diagnostic(
                            entry, manifests,
                            "tree path '\(Redact.short(entry.path))' is also the path of "
                                + "the entry at \(place(earlier, manifests)): two files cannot have one name"))
                }
            } else {
                firstOfPath = offset
            }
        }
        // Folders found to be no file's path; most entries share their folder with the one before.
        var lastFolder: Substring = ""
        for offset in tree.indices where offset == 0 || !FileName.same(tree[offset - 1].path, tree[offset].path) {
            let path = tree[offset].path
            // By byte: a Character search checks grapheme boundaries all the way.
            guard let deepest = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { continue }
            var folder = path[..<deepest]
            if FileName.same(folder, lastFolder) { continue }
            lastFolder = folder
            while true {
                if let file = firstEntry(at: folder, in: tree) {
                    diagnostics.append(
                        diagnostic(
                            tree[offset], manifests,
                            "tree path '\(Redact.short(path))' needs a folder "
                                + "'\(Redact.short(String(folder)))', which is the file of the entry at \(place(file, manifests))"))
                    lastFolder = ""
                    break
                }
                guard let slash = folder.utf8.lastIndex(of: UInt8(ascii: "/")) else { break }
                folder = folder[..<slash]
            }
        }
        return diagnostics
    }

    /// The first entry whose path is `path`, by a binary search of the sorted tree.
    private static func firstEntry(at path: Substring, in tree: [TreeEntry]) -> TreeEntry? {
        var low = 0
        var high = tree.count
        while low < high {
            let middle = (low + high) / 2
            if FileName.precedes(tree[middle].path, path) { low = middle + 1 } else { high = middle }
        }
        return low < tree.count && FileName.same(tree[low].path, path) ? tree[low] : nil
    }

    private static func diagnostic(_ entry: TreeEntry, _ manifests: [Manifest], _ message: String) -> ManifestDiagnostic {
        ManifestDiagnostic(path: manifests[entry.manifest].path, line: entry.line, column: entry.column, message: message)
    }

    private static func place(_ entry: TreeEntry, _ manifests: [Manifest]) -> String {
        "\(manifests[entry.manifest].path):\(entry.line):\(entry.column)"
    }
}
