import Crypto
import FoundationEssentials
import WorkerManifest
import WorkerSupport

/// How a published folder names its files: the layouts of `sync --tree DIR --layout` and
/// `worker export --layout`, defined here and nowhere else. A layout names each file by the
/// manifests' tree paths (`tree`) or by the entry's URL or content (an app library's cache
/// folder); the folder holds each cached entry once under that name. Adding a layout is a case
/// here: its `summary`, its `fileName`.
public enum TreeLayout: String, Sendable, CaseIterable {
    /// Files at their names: each entry at its tree path (`path`, else its URL's path). Needs the
    /// manifests.
    case tree
    /// SDImageCache (SDWebImage 5): lowercase hex MD5 of the URL string, plus `.` and the URL
    /// path's extension when it has one (without `:` or NUL, and at most 222 characters).
    case sdwebimage
    /// Kingfisher's DiskStorage with its default settings (`usesHashedFileName`, no
    /// `pathExtension`, no `autoExtAfterHashedFileName`): lowercase hex SHA-256 of the cache key,
    /// which for a plain URL is its absolute string. (Kingfisher before 8 used MD5.)
    case kingfisher
    /// Stored by hash: `<sha256 of the content>.<extension of the URL path>`.
    case hash

    /// One line for the command line's help.
    public var summary: String {
        switch self {
        case .tree: "each entry at its tree path (its `path`, else its URL's path); needs manifests"
        case .sdwebimage: "MD5 of the URL + its path extension (SDImageCache)"
        case .kingfisher: "SHA-256 of the URL (Kingfisher's DiskStorage, default settings)"
        case .hash: "<sha256 of the content>.<extension>"
        }
    }

    /// The layouts, as the command line lists them ("tree, sdwebimage, kingfisher or hash").
    public static var names: String {
        let all = allCases.map(\.rawValue)
        return all.dropLast().joined(separator: ", ") + " or " + all[all.count - 1]
    }

    /// Whether files are named by the manifests' tree paths (`ManifestSet.tree`), not by URL or content.
    public var namesByTreePath: Bool { self == .tree }

    /// The file name this layout gives `url`, whose content has SHA-256 `object`.
    public func fileName(url: String, object: String) -> String {
        let ext = Self.pathExtension(of: url)
        switch self {
        case .sdwebimage:
            let name = Hex.encode(Insecure.MD5.hash(data: Array(url.utf8)))
            let clean = ext.filter { $0 != ":" && $0 != "\0" }
            return clean.isEmpty || clean.utf8.count > 222 ? name : name + "." + clean
        case .kingfisher:
            return Hex.encode(SHA256.hash(data: Array(url.utf8)))
        case .hash:
            return ext.isEmpty || ext.contains("/") ? object : object + "." + ext
        case .tree:
            // Named by the manifests, not by the URL alone (`files(of:)`).
            return (try? URLKinds.treePath(written: url, resolved: url).get()) ?? object
        }
    }

    /// The files of the manifests' folder in this layout, each holding the object `object(entry)`
    /// names (nil: nothing cached, counted as missing): at each tree place for `tree` (an entry at
    /// two paths is there twice), else each entry at its `fileName`, one file per name (entries
    /// of one content in a layout named by content make one file).
    public func files(of manifests: ManifestSet, objectsDirectory: String, object: (Int) -> String?) -> [TreeFile] {
        if namesByTreePath {
            return manifests.tree.map { TreeFile(path: $0.path, object: object($0.entry), objectsDirectory: objectsDirectory) }
        }
        var files: [TreeFile] = []
        var named = Set<FileName.Key>()
        for entry in manifests.entries.indices {
            let url = manifests.entries.url(at: entry)
            guard let held = object(entry) else {
                files.append(TreeFile(path: url, object: nil, objectsDirectory: objectsDirectory))
                continue
            }
            let name = fileName(url: url, object: held)
            guard named.insert(FileName.Key(name)).inserted else { continue }
            files.append(TreeFile(path: name, object: held, objectsDirectory: objectsDirectory))
        }
        return files
    }

    /// The entries a folder in this layout shows: the tree's places' for `tree`, else every one.
    public func entries(of manifests: ManifestSet) -> [Int] {
        namesByTreePath ? manifests.tree.map(\.entry) : Array(manifests.entries.indices)
    }

    /// The extension of the URL's path (no query, no fragment), as NSURL's `pathExtension`.
    static func pathExtension(of url: String) -> String {
        guard let path = URL(string: url)?.path, let last = path.split(separator: "/").last,
            let dot = last.lastIndex(of: "."), dot != last.startIndex
        else { return "" }
        return String(last[last.index(after: dot)...])
    }
}
