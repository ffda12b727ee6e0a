import Crypto
import Glibc

/// One run per job: a sync of the same manifests (and the same shard) as a running one waits for
/// it — up to `--wait-lock`, then exit 3 — as a schedule's run that overlaps the last one did when
/// the whole cache was locked for a run. Syncs of other manifests, other shards and `get` overlap.
/// The lock is a `flock` on `CACHE/jobs/<digest of the manifest paths and shard>`.
enum JobLock {
    static func take(directory: String, manifests: [String], shard: Shard, wait: Double?,
                     context: RunContext) async throws(CacheError) -> CacheLock {
        let folder = directory + "/jobs"
        if mkdir(folder, 0o755) != 0, errno != EEXIST { throw .system(SystemError("create", folder)) }
        let job = manifests.sorted().joined(separator: "\n") + "\nshard " + shard.description
        let name = Hex.encode(Array(SHA256.hash(data: Array(job.utf8)).prefix(8)))
        return try await CacheLock(path: folder + "/" + name, wait: wait, noun: "the lock of a sync of the same manifests",
                                   context: context)
    }
}
