import FoundationEssentials
import Glibc
import Synchronization
import WorkerSupport

/// The cache's exclusive lock: `flock` on `CACHE/lock`, released when the process ends, so a
/// crashed run never leaves the cache locked. Held only to change what others may see at once:
/// a sync's start (tidy, plan) and each of its commits, prune, `rm`, `gc`, `verify --repair`.
/// Readers never take it. Hold it for a scope with `withLock`.
public final class CacheLock: Sendable {
    private let fd: Int32
    public let path: String
    private let released = Mutex(false)

    /// Runs `body` holding the lock, and releases it when `body` returns or throws.
    public static func withLock<T>(
        directory: String, wait: Double?, context: RunContext,
        _ body: () async throws(CacheError) -> T
    ) async throws(CacheError) -> T {
        let lock = try await CacheLock(directory: directory, wait: wait, context: context)
        defer { lock.release() }
        return try await body()
    }

    /// How often a long wait is said again (`RunContext.lockNotice`).
    static let waitNoticeInterval = 30.0

    /// Takes the lock, waiting up to `wait` seconds (nil: without limit).
    public convenience init(directory: String, wait: Double?, context: RunContext) async throws(CacheError) {
        try await self.init(path: directory + "/lock", wait: wait, noun: "the cache lock", context: context)
    }

    /// The lock for a commit (or a prune, or a run's end): waited for without limit, said only
    /// when the wait is long (another run's commit takes milliseconds; a `gc` may take longer).
    public static func forCommit(directory: String, context: RunContext) async throws(CacheError) -> CacheLock {
        try await CacheLock(path: directory + "/lock", wait: nil, noun: "the cache lock", firstNotice: 2, context: context)
    }

    /// Takes the `flock` of the file at `path` (made when missing), waiting up to `wait` seconds;
    /// `noun` names it in the context's notices of a wait, the first after `firstNotice` seconds.
    convenience init(path: String, wait: Double?, noun: String, firstNotice: Double = 0, context: RunContext) async throws(CacheError) {
        let fd = try Self.openOwnerOnly(path, flags: O_RDWR)
        try await self.init(fd: fd, path: path, wait: wait, noun: noun, firstNotice: firstNotice, context: context)
    }

    /// Takes the `flock` of `fd` (a lock file opened with `openOwnerOnly`), which it then owns.
    init(fd: Int32, path: String, wait: Double?, noun: String, firstNotice: Double = 0, context: RunContext) async throws(CacheError) {
        self.path = path
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else {
                let error = SystemError("lock", path)
                close(fd)
                throw .system(error)
            }
            let notices = context.lockNotice.map { onWait in
                LockWait.Notices(first: firstNotice, every: Self.waitNoticeInterval) { waited in
                    let holder = Self.readHolder(fd).map { " (\($0))" } ?? ""
                    let limit = wait.map { ", up to --wait-lock \(Units.formatDuration($0))" } ?? ""
                    onWait("waiting for \(noun) \(path), held by another run\(holder); waited \(Int(waited)) s\(limit)")
                }
            }
            // A cancelled wait, or one a stop request ends (a signal), ends like one that ran
            // out: the lock was not had.
            switch await LockWait.wait(fd: fd, operation: LOCK_EX, limit: wait, stop: context.stop, notices: notices) {
            case .held:
                break
            case .gaveUp:
                let holder = Self.readHolder(fd)
                close(fd)
                throw CacheError.locked(path: path, holder: holder)
            case .failed(let code):
                errno = code
                let error = SystemError("lock", path)
                close(fd)
                throw .system(error)
            }
        }
        self.fd = fd
        // The holder's pid, for a run that waits; never into a file another name links to
        // (a hard link planted at `lock` would be truncated).
        if OwnFile.isSingleLinked(fd) {
            let note = "pid \(getpid())\n"
            ftruncate(fd, 0)
            _ = note.withCString { pwrite(fd, $0, strlen($0), 0) }
        }
    }

    /// Opens a lock file (made when missing) so that only its owner may open it: `flock` works on a
    /// read-only descriptor, and a reader able to open a lock could hold every writer up. One made
    /// before is set to 0600 when it is this user's own single-named file; `at` opens it inside a
    /// folder's descriptor.
    static func openOwnerOnly(_ path: String, at folder: Int32 = AT_FDCWD, name: String? = nil, flags: Int32) throws(CacheError) -> Int32 {
        let fd = openat(folder, name ?? path, flags | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600)
        guard fd >= 0 else { throw .system(SystemError("open", path)) }
        var info = stat()
        if fstat(fd, &info) == 0, info.st_mode & 0o077 != 0, OwnFile.isPrivate(info) { fchmod(fd, 0o600) }
        return fd
    }

    /// Waits until no run is committing (a shared `flock` on `lock` once it is free, let go at
    /// once), up to `seconds`; a reader that may not open the file does not wait.
    public static func waitForCommit(directory: String, upTo seconds: Double) {
        let fd = open(directory + "/lock", O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return }
        defer { close(fd) }
        if flock(fd, LOCK_SH | LOCK_NB) != 0 { _ = LockWait.blocking(fd: fd, operation: LOCK_SH, upTo: seconds) }
        flock(fd, LOCK_UN)
    }

    /// Releases the lock (once; the end of the process releases it too).
    public func release() {
        guard released.setFirst() else { return }
        flock(fd, LOCK_UN)
        close(fd)
    }

    deinit {
        release()
    }

    private static func readHolder(_ fd: Int32) -> String? {
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = pread(fd, &buffer, 63, 0)
        guard count > 0 else { return nil }
        // Whatever the file holds reaches a terminal: printable, one line, short.
        let text = Sanitize.terminal(Text.trimmingWhitespace(String(decoding: buffer[0..<count], as: UTF8.self)), limit: 40)
        return text.isEmpty ? nil : text
    }
}
