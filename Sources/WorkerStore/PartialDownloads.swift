import Crypto
import FoundationEssentials
import Glibc
import Synchronization
import WorkerManifest
import WorkerSupport

/// Bodies cut off part-way, kept to be resumed: `partial/<sha256 of the URL>` holds the bytes
/// received, `partial/<…>.meta` the response's validator (ETag, else Last-Modified) and the URL.
/// A later attempt — in this run or the next — asks for the rest with `Range` + `If-Range`; the
/// final hash still covers every byte. Only bodies past a threshold are kept (small ones are
/// cheaper to fetch again), and only with a validator (without one a resumed body could mix two
/// versions; the hash would catch it, but the request would be wasted).
public struct PartialDownloads: Sendable {
    let directory: String
    /// Whether any part may be kept: looked up once, then set when a part is kept. Most runs have
    /// none, and then a request costs no hash of its URL and no stat for them.
    private let present: Presence

    private final class Presence: Sendable {
        let flag: Mutex<Bool>
        init(_ value: Bool) { flag = Mutex(value) }
    }

    init(directory: String) {
        self.directory = directory
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        present = Presence(!names.isEmpty)
    }

    /// A body to resume: where its bytes are, how many, and the validator to send as If-Range.
    public struct Resume: Sendable, Equatable {
        public let path: String
        public let offset: Int64
        public let validator: String
    }

    func key(_ url: String) -> String {
        Hex.encode(SHA256.hash(data: Array(url.utf8)))
    }

    func bodyPath(_ url: String) -> String { directory + "/" + key(url) }
    private func metaPath(_ url: String) -> String { bodyPath(url) + ".meta" }

    /// The kept part of `url`'s body, if any (and if its record is whole and for this URL).
    public func resume(for url: String) -> Resume? {
        guard present.flag.withLock({ $0 }) else { return nil }
        let body = bodyPath(url)
        var info = stat()
        guard lstat(body, &info) == 0, OwnFile.isPrivate(info), info.st_size > 0,
            let meta = try? String(contentsOfFile: metaPath(url), encoding: .utf8)
        else { return nil }
        let lines = meta.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard lines.count >= 2, lines[1] == url, !lines[0].isEmpty,
            !lines[0].utf8.contains(where: HTTPToken.isForbiddenInValue)
        else {
            discard(url)
            return nil
        }
        return Resume(path: body, offset: Int64(info.st_size), validator: lines[0])
    }

    /// Keeps the body at `temporary` (closed) as `url`'s part, with its validator.
    public func keep(_ temporary: String, url: String, validator: String) {
        present.flag.withLock { $0 = true }
        let meta = metaPath(url)
        // The URL may carry user info: the record is the owner's only, like the index.
        let text = Array((validator + "\n" + url + "\n").utf8)
        unlink(meta + ".tmp")
        let fd = open(meta + ".tmp", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        let written = fd >= 0 && text.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } == text.count
        if fd >= 0 { close(fd) }
        guard written, rename(meta + ".tmp", meta) == 0 else {
            unlink(meta + ".tmp")
            unlink(temporary)
            return
        }
        if temporary != bodyPath(url), rename(temporary, bodyPath(url)) != 0 {
            unlink(temporary)
            discard(url)
        }
    }

    /// Forgets `url`'s part (the body was completed, replaced, or cannot be resumed).
    public func discard(_ url: String) {
        unlink(bodyPath(url))
        unlink(metaPath(url))
    }

    /// Deletes kept parts not touched for `age` seconds (all of them with nil).
    public func removeAll(olderThan age: Double?, now: Double = Date().timeIntervalSince1970) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for name in names {
            var info = stat()
            guard lstat(directory + "/" + name, &info) == 0 else { continue }
            if let age, Double(info.st_mtim.tv_sec) > now - age { continue }
            unlink(directory + "/" + name)
        }
    }

    /// Forgets the record of a body that was completed and moved away.
    public func completed(_ url: String) {
        unlink(metaPath(url))
    }
}
