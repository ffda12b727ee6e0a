import FoundationEssentials
import Glibc
import WorkerSupport

/// Answers "is this object present?" for many objects at once: one `fstatat` per object against
/// an open descriptor of its fan-out folder, instead of resolving the whole path each time.
/// Links are not followed; only regular files count.
package final class ObjectDirectory {
    private let objectsDirectory: String
    /// Descriptors of the 256 fan-out folders, opened on first use; -1 when it cannot be opened.
    private var folders = [Int32](repeating: -2, count: 256)
    /// The regular files of every fan-out folder, by the 32 bytes their names spell, when
    /// `preload()` listed them.
    private var listed: Set<ObjectName>?
    /// Sizes `preloadSizes` read (-1: not a regular file there).
    private var sizes: [ObjectName: Int64] = [:]

    package init(objectsDirectory: String) {
        self.objectsDirectory = objectsDirectory
    }

    deinit {
        for fd in folders where fd >= 0 { close(fd) }
    }

    /// Lists every fan-out folder once (256 directory reads instead of one lookup per object):
    /// worth it when most of the cache is about to be checked. Only entries the file system marks
    /// as regular files are taken; anything else is left to `fstatat`.
    package func preload() {
        var names = Set<ObjectName>()
        for slot in 0..<256 {
            guard let folder = opendir(objectsDirectory + "/" + Hex.encode([UInt8(slot)])) else { continue }
            defer { closedir(folder) }
            while let entry = readdir(folder) {
                guard entry.pointee.d_type == UInt8(DT_REG) else { continue }
                let name = DirectoryEntry.withName(entry) { ObjectName(hex: $0) }
                if let name { names.insert(name) }
            }
        }
        listed = names
    }

    /// The listed objects no record names (nil when the folders were not listed): what an
    /// interrupted run or a hand left behind.
    func unreferenced(by records: [IndexRecord]) -> [String]? {
        guard let listed else { return nil }
        var named = Set<ObjectName>()
        named.reserveCapacity(records.count)
        for record in records {
            var object = record.object
            if let name = object.withUTF8({ ObjectName(hex: UnsafeRawBufferPointer($0)) }) { named.insert(name) }
        }
        return listed.subtracting(named).map(\.hex)
    }

    /// Lists the folders unless that was done already.
    package func preloadIfNeeded() {
        if listed == nil { preload() }
    }

    /// Reads the sizes of the objects `records` name, one `fstatat` each: done ahead, on the
    /// thread that reads the index while the manifests are parsed, so the plan's size check
    /// costs the run no time of its own.
    package func preloadSizes(of records: [IndexRecord]) {
        sizes.reserveCapacity(records.count)
        for record in records {
            var object = record.object
            guard let name = object.withUTF8({ ObjectName(hex: UnsafeRawBufferPointer($0)) }), sizes[name] == nil else { continue }
            var info = stat()
            sizes[name] = status(record.object, &info) && (info.st_mode & S_IFMT) == S_IFREG ? Int64(info.st_size) : -1
        }
    }

    /// Whether `preloadSizes` ran.
    package var hasSizes: Bool { !sizes.isEmpty }

    /// The size of the object's file, or nil when it is not a regular file here: a stat, unless
    /// `preloadSizes` read it (a listing tells names, not sizes).
    package func size(_ sha256: String) -> Int64? {
        if !sizes.isEmpty {
            var hex = sha256
            if let name = hex.withUTF8({ ObjectName(hex: UnsafeRawBufferPointer($0)) }), let known = sizes[name] {
                return known >= 0 ? known : nil
            }
        }
        var info = stat()
        guard status(sha256, &info), (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int64(info.st_size)
    }

    package func contains(_ sha256: String) -> Bool {
        if let listed {
            var hex = sha256
            if let name = hex.withUTF8({ ObjectName(hex: UnsafeRawBufferPointer($0)) }), listed.contains(name) { return true }
        }
        var info = stat()
        return status(sha256, &info) && (info.st_mode & S_IFMT) == S_IFREG
    }

    /// `fstatat` of the object in its fan-out folder's open descriptor (links not followed).
    private func status(_ sha256: String, _ info: inout stat) -> Bool {
        var name = sha256
        guard let slot = name.withUTF8({ bytes -> Int? in
            guard bytes.count == 64, let high = Hex.value(bytes[0]), let low = Hex.value(bytes[1]) else { return nil }
            return Int(high << 4 | low)
        }) else { return false }
        if folders[slot] == -2 {
            folders[slot] = open(objectsDirectory + "/" + Hex.encode([UInt8(slot)]), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        }
        guard folders[slot] >= 0 else { return false }
        return sha256.withCString { fstatat(folders[slot], $0, &info, AT_SYMLINK_NOFOLLOW) } == 0
    }
}

/// An object's name as the 32 bytes its 64 lowercase hex digits spell: a set of them costs no
/// string per file.
private struct ObjectName: Hashable {
    let words: (UInt64, UInt64, UInt64, UInt64)

    /// nil unless `hex` is exactly 64 lowercase hex digits.
    init?(hex: UnsafeRawBufferPointer) {
        guard hex.count == 64 else { return nil }
        let bytes = hex.bindMemory(to: UInt8.self)
        var invalid: UInt8 = 0
        var a: UInt64 = 0, b: UInt64 = 0, c: UInt64 = 0, d: UInt64 = 0
        for offset in 0..<16 {
            a = a << 4 | UInt64(Hex.lowercaseNibble(bytes[offset], &invalid))
            b = b << 4 | UInt64(Hex.lowercaseNibble(bytes[offset + 16], &invalid))
            c = c << 4 | UInt64(Hex.lowercaseNibble(bytes[offset + 32], &invalid))
            d = d << 4 | UInt64(Hex.lowercaseNibble(bytes[offset + 48], &invalid))
        }
        guard invalid == 0 else { return nil }
        words = (a, b, c, d)
    }

    static func == (a: ObjectName, b: ObjectName) -> Bool { a.words == b.words }

    /// The 64 lowercase hex digits.
    var hex: String {
        [words.0, words.1, words.2, words.3].map { word in
            let digits = String(word, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }.joined()
    }

    func hash(into hasher: inout Hasher) {
        // SHA-256 output: any 64 of its bits are as good as all of them for bucketing.
        hasher.combine(words.0)
    }
}
