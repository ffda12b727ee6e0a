import Crypto
import FoundationEssentials
import Glibc
import WorkerManifest
import WorkerStore
import WorkerSupport

/// The on-disk layout an app or server reads directly.
public enum ExportLayout: String, Sendable, CaseIterable {
    /// SDImageCache (SDWebImage 5): lowercase hex MD5 of the URL string, plus `.` and the URL
    /// path's extension when it has one (without `:` or NUL, and at most 222 characters).
    case sdwebimage
    /// Kingfisher's DiskStorage with its default settings (`usesHashedFileName`, no
    /// `pathExtension`, no `autoExtAfterHashedFileName`): lowercase hex SHA-256 of the cache key,
    /// which for a plain URL is its absolute string. (Kingfisher before 8 used MD5.)
    case kingfisher
    /// Stored by hash: `<sha256 of the content>.<extension of the URL path>`.
    case hash
    /// Files at their names: each entry at its tree path (`path`, else its URL's path), as
    /// `sync --tree` publishes them. Needs the manifests.
    case tree

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
            // Named by the manifests, not by the URL alone (`Exporter.export(tree:)`).
            return (try? TreePath.derived(fromURL: url).get()) ?? object
        }
    }

    /// The extension of the URL's path (no query, no fragment), as NSURL's `pathExtension`.
    static func pathExtension(of url: String) -> String {
        guard let path = URL(string: url)?.path, let last = path.split(separator: "/").last,
              let dot = last.lastIndex(of: "."), dot != last.startIndex
        else { return "" }
        return String(last[last.index(after: dot)...])
    }
}

/// `worker export`: writes cached files into a folder in a layout, as hard links to the objects
/// where the file system allows (copies otherwise). The objects are read-only, so are the links.
///
/// Into a real folder, an export keeps the list of what it wrote there (`.worker-export`) and
/// removes what an earlier export wrote that this one does not (an entry that left the
/// manifests), never another file. `atomic` publishes the folder as `TreePublisher` does instead.
public struct Exporter: Sendable {
    public let cacheDirectory: String

    public init(cacheDirectory: String) {
        self.cacheDirectory = cacheDirectory
    }

    public struct Result: Sendable {
        public var linked = 0
        public var copied = 0
        public var unchanged = 0
        /// Files an earlier export wrote that this one does not name, removed.
        public var removed = 0
        public var missing: [String] = []
        /// Entries exported (several may share one file).
        public var entries = 0
        /// What `atomic` published.
        public var tree: TreeOutcome?
        /// Rows whose object was gone when it was linked (a writer's race), looked up again.
        var vanished = Set<String>()
    }

    /// The list of what an export wrote into its folder, in that folder.
    public static let listName = ".worker-export"

    /// One file to write: its name in the folder, its object, and the URL it is for.
    struct File {
        let name: String
        /// The object's name (its SHA-256).
        let object: String
        let url: String
    }

    /// Exports every cached entry, or only those whose URL is in `urls`; for the tree layout,
    /// `tree` names each file (a path and its entry's URL). A writer may replace a version while
    /// the rows are read: into a real folder, an object gone by the time it is linked is looked up
    /// again once the commit in progress is done (twice at most), so a race is never reported
    /// as a missing entry; an atomic export holds the cache's lock while it links.
    public func export(layout: ExportLayout, to folder: String, urls: Set<String>?,
                       tree: [(path: String, url: String)]? = nil, atomic: Bool = false,
                       context: RunContext = RunContext()) async throws(CacheError) -> Result {
        if atomic {
            let publisher = TreePublisher(path: folder)
            try publisher.check()
            let lock = try await CacheLock(directory: cacheDirectory, wait: nil, context: context)
            defer { lock.release() }
            var result = try plan(layout: layout, urls: urls, tree: tree)
            let objects = CacheLayout.objectsDirectory(cacheDirectory)
            let outcome = try publisher.publish(result.files.map { TreeFile(path: $0.name, object: $0.object, objectsDirectory: objects) })
            result.summary.linked = outcome.linked
            result.summary.copied = outcome.copied
            result.summary.unchanged = outcome.switched ? 0 : outcome.files
            result.summary.tree = outcome
            return result.summary
        }
        let list = ExportList(folder: folder)
        let previous = list.read()
        var planned = try plan(layout: layout, urls: urls, tree: tree)
        var result = try write(planned.files, layout: layout, to: folder, into: planned.summary)
        for _ in 0..<2 where !result.vanished.isEmpty {
            CacheLock.waitForCommit(directory: cacheDirectory, upTo: 2)
            let retried = result.vanished
            let again = try plan(layout: layout, urls: retried, tree: tree?.filter { retried.contains($0.url) })
            result.vanished = []
            result.entries -= retried.count
            result.entries += again.summary.entries
            result.missing += again.summary.missing
            result = try write(again.files, layout: layout, to: folder, into: result)
            planned.files += again.files
        }
        result.missing += result.vanished.map(Redact.url)
        result.missing.sort()
        result.vanished = []
        let names = Set(planned.files.map(\.name))
        result.removed = list.removeFiles(previous.filter { !names.contains($0) })
        try list.write(names.sorted())
        return result
    }

    /// The files to write and the entries with nothing cached, from the index as it is now.
    private func plan(layout: ExportLayout, urls: Set<String>?,
                      tree: [(path: String, url: String)]?) throws(CacheError) -> (files: [File], summary: Result) {
        var summary = Result()
        let indexPath = CacheLayout.indexPath(cacheDirectory)
        guard access(indexPath, F_OK) == 0 else {
            summary.missing = (tree.map { Set($0.map(\.url)) } ?? urls).map { $0.map(Redact.url).sorted() } ?? []
            return ([], summary)
        }
        let index = try CacheIndex(path: indexPath, create: false, readOnly: true)
        var files: [File] = []
        if let tree {
            var missing = Set<String>()
            for place in tree {
                guard let record = try index.record(url: place.url) else {
                    missing.insert(place.url)
                    continue
                }
                summary.entries += 1
                files.append(File(name: place.path, object: record.object, url: place.url))
            }
            summary.missing = missing.map(Redact.url).sorted()
            return (files, summary)
        }
        // Asked-for URLs as the index keys them (without user info in a shared cache).
        let wanted = urls.map { Set($0.map(index.key)) }
        var found = Set<String>()
        // Entries that share a file name (one content, in a layout named by content) make one file.
        var named = Set<String>()
        for record in try index.allRecords() where wanted?.contains(record.url) ?? true {
            found.insert(record.url)
            summary.entries += 1
            let name = layout.fileName(url: record.url, object: record.object)
            guard named.insert(name).inserted else { continue }
            files.append(File(name: name, object: record.object, url: record.url))
        }
        if let urls {
            summary.missing = urls.filter { !found.contains(index.key($0)) }.map(Redact.url).sorted()
        }
        return (files, summary)
    }

    /// Links (or copies) `files` into the real folder `folder`, replacing what is there under
    /// their names unless it is already the same object.
    private func write(_ files: [File], layout: ExportLayout, to folder: String,
                       into summary: Result) throws(CacheError) -> Result {
        var result = summary
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw CacheError.output(path: folder, reason: "cannot create the export folder: \(ErrorText.describe(error))")
        }
        var folders = Set<String>()
        let objects = CacheLayout.objectsDirectory(cacheDirectory)
        for file in files {
            let source = CacheLayout.objectPath(inObjectsDirectory: objects, file.object)
            let target = folder + "/" + file.name
            if let slash = file.name.lastIndex(of: "/"), folders.insert(String(file.name[..<slash])).inserted {
                do {
                    try FileManager.default.createDirectory(atPath: folder + "/" + file.name[..<slash],
                                                            withIntermediateDirectories: true)
                } catch {
                    throw CacheError.output(path: target, reason: "cannot create its folder: \(ErrorText.describe(error))")
                }
            }
            var sourceInfo = stat()
            var targetInfo = stat()
            guard lstat(source, &sourceInfo) == 0 else {
                result.vanished.insert(file.url)
                continue
            }
            if lstat(target, &targetInfo) == 0 {
                if targetInfo.st_ino == sourceInfo.st_ino && targetInfo.st_dev == sourceInfo.st_dev {
                    result.unchanged += 1
                    continue
                }
                unlink(target)
            }
            switch try LinkOrCopy.place(source, in: AT_FDCWD, target, shownAs: target) {
            case .linked?: result.linked += 1
            case .copied?: result.copied += 1
            case nil: result.vanished.insert(file.url)
            }
        }
        return result
    }
}
