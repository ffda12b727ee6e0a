import Crypto
import FoundationEssentials
import Glibc

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
public struct Exporter: Sendable {
    public let cacheDirectory: String

    public init(cacheDirectory: String) {
        self.cacheDirectory = cacheDirectory
    }

    public struct Result: Sendable {
        public var linked = 0
        public var copied = 0
        public var unchanged = 0
        public var missing: [String] = []
        /// Entries exported (several may share one file).
        public var entries = 0
        /// Rows whose object was gone when it was linked (a writer's race), looked up again.
        var vanished = Set<String>()
    }

    /// Exports every cached entry, or only those whose URL is in `urls`. A writer may replace a
    /// version while the rows are read: an object gone by the time it is linked is looked up
    /// again once the commit in progress is done (twice at most), so a race is never reported as
    /// a missing entry.
    public func export(layout: ExportLayout, to folder: String, urls: Set<String>?) throws(CacheError) -> Result {
        var result = try exportOnce(layout: layout, to: folder, urls: urls)
        for _ in 0..<2 where !result.vanished.isEmpty {
            CacheLock.waitForCommit(directory: cacheDirectory, upTo: 2)
            var again = try exportOnce(layout: layout, to: folder, urls: result.vanished)
            again.unchanged += result.unchanged
            again.linked += result.linked
            again.copied += result.copied
            again.entries += result.entries - result.vanished.count
            again.missing += result.missing
            result = again
        }
        result.missing += result.vanished.map(Redact.url)
        result.missing.sort()
        result.vanished = []
        return result
    }

    private func exportOnce(layout: ExportLayout, to folder: String, urls: Set<String>?) throws(CacheError) -> Result {
        var result = Result()
        let indexPath = CacheLayout.indexPath(cacheDirectory)
        guard access(indexPath, F_OK) == 0 else {
            result.missing = urls.map { Array($0).sorted() } ?? []
            return result
        }
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw CacheError.output(path: folder, reason: "cannot create the export folder: \(ErrorText.describe(error))")
        }
        let index = try CacheIndex(path: indexPath, create: false, readOnly: true)
        let records = try index.allRecords()
        // Asked-for URLs as the index keys them (without user info in a shared cache).
        let wanted = urls.map { Set($0.map(index.key)) }
        var found = Set<String>()
        // Entries that share a file name (one content, in a layout named by content) make one
        // file: it is written and counted once.
        var written = Set<String>()
        for record in records where wanted?.contains(record.url) ?? true {
            found.insert(record.url)
            let source = CacheLayout.objectPath(cacheDirectory, record.object)
            let target = folder + "/" + layout.fileName(url: record.url, object: record.object)
            result.entries += 1
            guard written.insert(target).inserted else { continue }
            var sourceInfo = stat()
            var targetInfo = stat()
            guard lstat(source, &sourceInfo) == 0 else {
                result.vanished.insert(record.url)
                continue
            }
            if lstat(target, &targetInfo) == 0 {
                if targetInfo.st_ino == sourceInfo.st_ino && targetInfo.st_dev == sourceInfo.st_dev {
                    result.unchanged += 1
                    continue
                }
                unlink(target)
            }
            if link(source, target) == 0 {
                result.linked += 1
            } else if [EXDEV, EPERM, EMLINK, EROFS, EACCES].contains(errno) {
                do {
                    try FileManager.default.copyItem(atPath: source, toPath: target)
                    result.copied += 1
                } catch {
                    throw CacheError.output(path: target, reason: "cannot copy: \(ErrorText.describe(error))")
                }
            } else {
                throw .system(SystemError("link", target))
            }
        }
        if let urls {
            result.missing += urls.filter { !found.contains(index.key($0)) }.map(Redact.url).sorted()
        }
        return result
    }
}
