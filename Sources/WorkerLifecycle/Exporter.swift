import FoundationEssentials
import Glibc
import WorkerManifest
import WorkerStore
import WorkerSupport

/// `worker export`: writes cached files into a folder in a layout, as hard links to the objects
/// where the file system allows (copies otherwise). The objects are read-only, so are the links.
///
/// Into a real folder, an export keeps the list of what it wrote there (`.worker-export`) and
/// removes what an earlier export wrote that this one does not (an entry that left the
/// manifests), and only while it is still what the export made (`ExportList`). Every folder and
/// file under the folder is made, replaced and removed through folder descriptors, never
/// following a link: a link where a folder goes is refused (exit 2, naming it), and a link where
/// a file goes is replaced (the link itself). `atomic` publishes the folder as `TreePublisher`
/// does instead.
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
        /// What the folder holds now, for the list.
        var written: [ExportList.Item] = []
    }

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
    /// as a missing entry; an atomic export holds the cache's lock while it links (after the
    /// tree's lock, waited for up to `wait` seconds).
    public func export(
        layout: TreeLayout, to folder: String, urls: Set<String>?,
        tree: [(path: String, url: String)]? = nil, atomic: Bool = false, wait: Double? = nil,
        context: RunContext = RunContext()
    ) async throws(CacheError) -> Result {
        if atomic {
            let publisher = TreePublisher(path: folder)
            let objects = CacheLayout.objectsDirectory(cacheDirectory)
            var result = Result()
            let outcome = try await publisher.publish(cacheDirectory: cacheDirectory, wait: wait, context: context) {
                () throws(CacheError) in
                let planned = try plan(layout: layout, urls: urls, tree: tree)
                result = planned.summary
                return planned.files.map { TreeFile(path: $0.name, object: $0.object, objectsDirectory: objects) }
            }
            result.linked = outcome.linked
            result.copied = outcome.copied
            result.unchanged = outcome.switched ? 0 : outcome.files
            result.tree = outcome
            return result
        }
        let root = try FolderHandle.make(folder, noun: "the export folder")
        let list = ExportList(folder: root)
        let previous = list.read()
        var planned = try plan(layout: layout, urls: urls, tree: tree)
        var result = try write(planned.files, to: root, into: planned.summary)
        for _ in 0..<2 where !result.vanished.isEmpty {
            CacheLock.waitForCommit(directory: cacheDirectory, upTo: 2)
            let retried = result.vanished
            let again = try plan(layout: layout, urls: retried, tree: tree?.filter { retried.contains($0.url) })
            result.vanished = []
            result.entries -= retried.count
            result.entries += again.summary.entries
            result.missing += again.summary.missing
            result = try write(again.files, to: root, into: result)
            planned.files += again.files
        }
        result.missing += result.vanished.map(Redact.url)
        result.missing.sort()
        result.vanished = []
        let names = Set(planned.files.map { FileName.Key($0.name) })
        result.removed = list.removeFiles(
            previous.filter { !names.contains(FileName.Key($0.name)) },
            objectsDirectory: CacheLayout.objectsDirectory(cacheDirectory))
        try list.write(result.written)
        return result
    }

    /// The files to write and the entries with nothing cached, from the index as it is now.
    private func plan(
        layout: TreeLayout, urls: Set<String>?,
        tree: [(path: String, url: String)]?
    ) throws(CacheError) -> (files: [File], summary: Result) {
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
        var named = Set<FileName.Key>()
        for record in try index.allRecords() where wanted?.contains(record.url) ?? true {
            found.insert(record.url)
            summary.entries += 1
            let name = layout.fileName(url: record.url, object: record.object)
            guard named.insert(FileName.Key(name)).inserted else { continue }
            files.append(File(name: name, object: record.object, url: record.url))
        }
        if let urls {
            summary.missing = urls.filter { !found.contains(index.key($0)) }.map(Redact.url).sorted()
        }
        return (files, summary)
    }

    /// Links (or copies) `files` into the folder `root`, each folder and file reached from its
    /// descriptor without following a link, replacing what is there under their names (a file,
    /// or a link itself) unless it is already the same object.
    private func write(_ files: [File], to root: FolderHandle, into summary: Result) throws(CacheError) -> Result {
        var result = summary
        let objects = CacheLayout.objectsDirectory(cacheDirectory)
        var walk = FolderWalk(root: root)
        for file in files.sorted(by: { FileName.precedes($0.name, $1.name) }) {
            let source = CacheLayout.objectPath(inObjectsDirectory: objects, file.object)
            var sourceInfo = stat()
            guard lstat(source, &sourceInfo) == 0 else {
                result.vanished.insert(file.url)
                continue
            }
            let (folder, name) = try walk.parent(of: file.name)
            if let existing = folder.info(name) {
                if existing.st_ino == sourceInfo.st_ino && existing.st_dev == sourceInfo.st_dev {
                    result.unchanged += 1
                    result.written.append(ExportList.Item(name: file.name, object: file.object, existing))
                    continue
                }
                guard existing.st_mode & S_IFMT != S_IFDIR else {
                    throw .treeRefused(
                        path: folder.shown(name),
                        reason: "it is a folder where the export writes a file; "
                            + "move it away or choose another folder")
                }
                folder.unlink(name)
            }
            switch try LinkOrCopy.place(source, in: folder.fd, name, shownAs: folder.shown(name)) {
            case .linked?: result.linked += 1
            case .copied?: result.copied += 1
            case nil:
                result.vanished.insert(file.url)
                continue
            }
            if let placed = folder.info(name) {
                result.written.append(ExportList.Item(name: file.name, object: file.object, placed))
            }
        }
        return result
    }
}
