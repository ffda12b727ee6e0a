/// Tree paths that cannot make one tree: two entries at one path (unless both are the same URL,
/// listed twice), and a file where another entry needs a folder (`a` and `a/b`). Each problem
/// names both entries.
enum TreeConflicts {
    static func find(_ tree: [TreeEntry], manifests: [Manifest]) -> [ManifestDiagnostic] {
        var diagnostics: [ManifestDiagnostic] = []
        var first: [String: TreeEntry] = [:]
        first.reserveCapacity(tree.count)
        for entry in tree {
            if let earlier = first[entry.path] {
                if earlier.entry != entry.entry {
                    diagnostics.append(diagnostic(entry, manifests, "tree path '\(Redact.short(entry.path))' is also the path of "
                        + "the entry at \(place(earlier, manifests)): two files cannot have one name"))
                }
                continue
            }
            first[entry.path] = entry
        }
        for entry in tree where first[entry.path] == entry {
            var folder = Substring(entry.path)
            while let slash = folder.lastIndex(of: "/") {
                folder = folder[..<slash]
                if let file = first[String(folder)] {
                    diagnostics.append(diagnostic(entry, manifests, "tree path '\(Redact.short(entry.path))' needs a folder "
                        + "'\(Redact.short(String(folder)))', which is the file of the entry at \(place(file, manifests))"))
                    break
                }
            }
        }
        return diagnostics
    }

    private static func diagnostic(_ entry: TreeEntry, _ manifests: [Manifest], _ message: String) -> ManifestDiagnostic {
        ManifestDiagnostic(path: manifests[entry.manifest].path, line: entry.line, column: entry.column, message: message)
    }

    private static func place(_ entry: TreeEntry, _ manifests: [Manifest]) -> String {
        "\(manifests[entry.manifest].path):\(entry.line):\(entry.column)"
    }
}
