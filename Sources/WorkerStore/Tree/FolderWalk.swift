import Glibc
import WorkerSupport

/// The folders of files visited in path order, each entered from the one above it without
/// following a link: the open ones are the current path's (as deep as it is), so a tree of any
/// size holds a few descriptors.
public struct FolderWalk {
    private let root: FolderHandle
    /// The current folder path's components and their folders (compared as bytes: two spellings
    /// of `café` are two folders).
    private var open: [(name: String, folder: FolderHandle)] = []
    /// Make folders that are missing.
    private let create: Bool
    /// Flush each folder as the walk leaves it (`finish` flushes the rest): where one syncfs
    /// does not make their names durable (`Durability.eachFile`).
    private let flushes: Bool

    public init(root: FolderHandle, create: Bool = true, flushes: Bool = false) {
        self.root = root
        self.create = create
        self.flushes = flushes
    }

    /// Flushes the folders still open and the root, when the walk flushes folders.
    public mutating func finish() throws(CacheError) {
        try leave(downTo: 0)
        if flushes { try Self.flush(root) }
    }

    /// Closes the open folders below `depth`, flushing each first when the walk flushes.
    private mutating func leave(downTo depth: Int) throws(CacheError) {
        while open.count > depth {
            let last = open.removeLast()
            if flushes { try Self.flush(last.folder) }
        }
    }

    private static func flush(_ folder: FolderHandle) throws(CacheError) {
        do throws(SystemError) { try Durability.flushFolder(folder.fd, shown: folder.path) } catch { throw .system(error) }
    }

    /// The folder holding `path` (relative to the root) and the file's own name in it; nil
    /// when a folder is missing and the walk makes none. A link or a file where a folder goes
    /// is refused (exit 2, naming it).
    public mutating func parent(of path: String) throws(CacheError) -> (folder: FolderHandle, name: String) {
        guard let found = try find(path) else { throw .system(SystemError("open", root.shown(path), code: ENOENT)) }
        return found
    }

    public mutating func find(_ path: String) throws(CacheError) -> (folder: FolderHandle, name: String)? {
        var components = path.split(separator: "/", omittingEmptySubsequences: true)
        guard let leaf = components.popLast() else { throw .system(SystemError("open", root.shown(path), code: EISDIR)) }
        var depth = 0
        while depth < open.count, depth < components.count, FileName.same(open[depth].name, components[depth]) { depth += 1 }
        try leave(downTo: depth)
        while depth < components.count {
            let above = open.last?.folder ?? root
            guard let next = try above.child(components[depth], create: create) else { return nil }
            open.append((String(components[depth]), next))
            depth += 1
        }
        return (open.last?.folder ?? root, String(leaf))
    }

    /// Removes the current path's folders while they are empty, deepest first.
    public mutating func removeEmptyFolders() {
        while let last = open.popLast() {
            let above = open.last?.folder ?? root
            guard unlinkat(above.fd, last.name, AT_REMOVEDIR) == 0 else {
                open.append(last)
                return
            }
        }
    }
}
