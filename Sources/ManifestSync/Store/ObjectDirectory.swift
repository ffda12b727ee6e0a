import Foundation

/// Answers "is this object present?" for many objects at once: one `fstatat` per object against
/// an open descriptor of its fan-out folder, instead of a walk of the whole path (the warm run's
/// largest cost at 10k entries). Links are not followed; only regular files count.
final class ObjectDirectory {
    private let objectsDirectory: String
    /// Descriptors of the 256 fan-out folders, opened on first use; -1 when it cannot be opened.
    private var folders = [Int32](repeating: -2, count: 256)
    /// Names of the regular files in every fan-out folder, when `preload()` listed them.
    private var listed: Set<String>?

    init(objectsDirectory: String) {
        self.objectsDirectory = objectsDirectory
    }

    deinit {
        for fd in folders where fd >= 0 { close(fd) }
    }

    /// Lists every fan-out folder once (256 directory reads instead of one lookup per object):
    /// worth it when most of the cache is about to be checked. Only entries the file system marks
    /// as regular files are taken; anything else is left to `fstatat`.
    func preload() {
        var names = Set<String>()
        for slot in 0..<256 {
            guard let folder = opendir(objectsDirectory + "/" + Hex.encode([UInt8(slot)])) else { continue }
            defer { closedir(folder) }
            while let entry = readdir(folder) {
                guard entry.pointee.d_type == UInt8(DT_REG) else { continue }
                let name = withUnsafePointer(to: entry.pointee.d_name) {
                    $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
                }
                if name.utf8.count == 64 { names.insert(name) }
            }
        }
        listed = names
    }

    func contains(_ sha256: String) -> Bool {
        if let listed, listed.contains(sha256) { return true }
        var name = sha256
        return name.withUTF8 { bytes -> Bool in
            guard bytes.count == 64, let high = Hex.value(bytes[0]), let low = Hex.value(bytes[1]) else { return false }
            let slot = Int(high << 4 | low)
            if folders[slot] == -2 {
                folders[slot] = open(objectsDirectory + "/" + Hex.encode([UInt8(slot)]), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            }
            guard folders[slot] >= 0 else { return false }
            var info = stat()
            return sha256.withCString { fstatat(folders[slot], $0, &info, AT_SYMLINK_NOFOLLOW) } == 0
                && (info.st_mode & S_IFMT) == S_IFREG
        }
    }
}
