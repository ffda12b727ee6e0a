import Foundation

/// Answers "is this object present?" for many objects at once: one `fstatat` per object against
/// an open descriptor of its fan-out folder, instead of a walk of the whole path (the warm run's
/// largest cost at 10k entries). Links are not followed; only regular files count.
final class ObjectDirectory {
    private let objectsDirectory: String
    /// Descriptors of the 256 fan-out folders, opened on first use; -1 when it cannot be opened.
    private var folders = [Int32](repeating: -2, count: 256)

    init(objectsDirectory: String) {
        self.objectsDirectory = objectsDirectory
    }

    deinit {
        for fd in folders where fd >= 0 { close(fd) }
    }

    func contains(_ sha256: String) -> Bool {
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
