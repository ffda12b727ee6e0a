import Crypto
import Glibc
import WorkerManifest
import WorkerSupport

/// One run per job: a sync of the same manifests (and the same shard) as a running one waits for
/// it — up to `--wait-lock`, then exit 3 — as a schedule's run that overlaps the last one did when
/// the whole cache was locked for a run. Syncs of other manifests, other shards and `get` overlap.
/// The lock is a `flock` on `CACHE/jobs/<digest of the manifest paths and shard>`, a file made
/// inside the folder's descriptor: `jobs` must be this user's real folder, never a link.
public enum JobLock {
    public static func take(
        directory: String, manifests: [String], shard: Shard, wait: Double?,
        context: RunContext
    ) async throws(CacheError) -> CacheLock {
        let path = directory + "/jobs"
        if mkdir(path, 0o700) != 0, errno != EEXIST { throw .system(SystemError("create", path)) }
        let folder = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard folder >= 0 else {
            if errno == ELOOP || errno == ENOTDIR { throw .unsafe("\(path) is not a real folder (a link or a file in its place)") }
            throw .system(SystemError("open", path))
        }
        defer { close(folder) }
        var info = stat()
        guard fstat(folder, &info) == 0, info.st_uid == geteuid() else {
            throw .unsafe(
                "\(path) belongs to another user (\(CacheAccess.owner(info))): run the command as the cache's owner, "
                    + "or use a cache of your own (--cache-dir)")
        }
        let job = manifests.sorted().joined(separator: "\n") + "\nshard " + shard.description
        let name = Hex.encode(Array(SHA256.hash(data: Array(job.utf8)).prefix(8)))
        let fd = try CacheLock.openOwnerOnly(path + "/" + name, at: folder, name: name, flags: O_RDWR)
        return try await CacheLock(
            fd: fd, path: path + "/" + name, wait: wait, noun: "the lock of a sync of the same manifests",
            context: context)
    }
}
