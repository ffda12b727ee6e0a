import FoundationEssentials
import Glibc
import WorkerManifest
import WorkerReport
import WorkerStore
import WorkerSupport

/// What an export wrote into a real folder (`.worker-export` there, a name per line), so that
/// the next export removes what it wrote and no longer names, and nothing else.
struct ExportList {
    let folder: String
    var path: String { folder + "/" + Exporter.listName }

    /// The names the last export wrote (none without a list, or a list this program cannot read).
    func read() -> [String] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
            .filter { TreePath.problem($0) == nil && $0 != Exporter.listName }
    }

    func write(_ names: [String]) throws(CacheError) {
        do {
            try AtomicFile.write(Data((names.joined(separator: "\n") + (names.isEmpty ? "" : "\n")).utf8), to: path)
        } catch {
            throw .output(path: path, reason: ErrorText.describe(error))
        }
    }

    /// Removes these files (each a name the last export wrote, never a folder) and the folders
    /// they leave empty; how many files it removed.
    func removeFiles(_ names: [String]) -> Int {
        var removed = 0
        for name in names {
            var info = stat()
            let target = folder + "/" + name
            guard lstat(target, &info) == 0, info.st_mode & S_IFMT != S_IFDIR, unlink(target) == 0 else { continue }
            removed += 1
            var parent = Substring(name)
            while let slash = parent.lastIndex(of: "/") {
                parent = parent[..<slash]
                guard rmdir(folder + "/" + parent) == 0 else { break }
            }
        }
        return removed
    }
}
