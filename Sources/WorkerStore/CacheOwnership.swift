import Glibc
import WorkerSupport

/// Whether another user could write into the cache: a command that writes refuses such a cache
/// (exit 4), since whoever may create names in its folders can plant a link or a file under a
/// name the run then writes through, deletes or trusts — with the run's rights, root's included.
/// The root and every folder the program writes in must be real folders owned by this user, and
/// writable by no one else: not by every user, and by its group only when no one but the owner
/// is in it (a user's private group under `umask 002`). The files it writes through (the index,
/// its WAL and shared memory, the locks) must be this user's too.
enum CacheOwnership {
    /// Why another user could write into the cache at `root`, with the fix, or nil. A cache that
    /// does not exist yet is made by the command, as its user.
    static func problem(root: String) -> String? {
        let uid = geteuid()
        var info = stat()
        guard stat(root, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else { return nil }
        if let problem = folderProblem(root, info, uid: uid) { return problem }
        var folders = ["objects", "objects/sha256", "tmp", "partial", "jobs"].map { root + "/" + $0 }
        let fanOut = CacheLayout.objectsDirectory(root)
        // The fan-out folders, when their parent is there to hold them (a new cache's is not: 256
        // lookups for nothing).
        if lstat(fanOut, &info) == 0 {
            for byte in 0..<256 { folders.append(fanOut + "/" + Hex.encode([UInt8(byte)])) }
        }
        for folder in folders {
            guard lstat(folder, &info) == 0 else { continue }
            guard (info.st_mode & S_IFMT) == S_IFDIR else {
                return "\(folder) is not a real folder (\(kind(info))): another user may have planted it; "
                    + "remove it, or use a cache of your own (--cache-dir)"
            }
            if let problem = folderProblem(folder, info, uid: uid) { return problem }
        }
        let index = CacheLayout.indexPath(root)
        for file in [index, index + "-wal", index + "-shm", root + "/lock", root + "/writers"] {
            guard lstat(file, &info) == 0 else { continue }
            guard (info.st_mode & S_IFMT) == S_IFREG else {
                return "\(file) is not a regular file (\(kind(info))): another user may have planted it; "
                    + "remove it, or use a cache of your own (--cache-dir)"
            }
            guard info.st_uid == uid else {
                return "\(file) belongs to another user (\(CacheAccess.owner(info))), and this command writes through it "
                    + "as \(CacheAccess.currentUser()): run it as the cache's owner, or use a cache of your own (--cache-dir)"
            }
        }
        return nil
    }

    /// Why another user could write into the folder `path` (its `info`), with the fix, or nil;
    /// `instead` is the way out besides fixing the folder.
    static func folderProblem(
        _ path: String, _ info: stat, uid: uid_t,
        instead: String = "use a cache of your own (--cache-dir)"
    ) -> String? {
        let fix = "; fix: chmod -R go-w \(Sanitize.terminal(path)) (as its owner), or \(instead)"
        guard info.st_uid == uid else {
            return "\(path) belongs to another user (\(CacheAccess.owner(info))), who could plant links in it that this "
                + "command, as \(CacheAccess.currentUser()), would write through: run it as the folder's owner, or "
                + instead
        }
        if info.st_mode & 0o002 != 0 {
            return "\(path) can be written by every user (\(CacheAccess.owner(info))): another user could plant links "
                + "in it that this command would write through" + fix
        }
        if info.st_mode & 0o020 != 0, let others = otherMembers(of: info.st_gid, besides: info.st_uid) {
            return "\(path) can be written by its group, which has other members (\(others)) (\(CacheAccess.owner(info))): "
                + "they could plant links in it that this command would write through" + fix
        }
        return nil
    }

    /// The users in group `gid` other than `owner` (named in the group's list, or having it as
    /// their primary group), in words; nil when there are none (a private group).
    static func otherMembers(of gid: gid_t, besides owner: uid_t) -> String? {
        let ownerName = getpwuid(owner).flatMap { $0.pointee.pw_name.map { String(cString: $0) } }
        var names: [String] = []
        if let group = getgrgid(gid), var member = group.pointee.gr_mem {
            while let name = member.pointee {
                let text = String(cString: name)
                if text != ownerName { names.append(text) }
                member += 1
            }
        }
        setpwent()
        while let user = getpwent() {
            guard user.pointee.pw_gid == gid, user.pointee.pw_uid != owner, let name = user.pointee.pw_name else { continue }
            let text = String(cString: name)
            if !names.contains(text) { names.append(text) }
        }
        endpwent()
        guard !names.isEmpty else { return nil }
        let shown = names.prefix(3).joined(separator: ", ")
        return names.count > 3 ? "\(shown) and \(names.count - 3) more" : shown
    }

    private static func kind(_ info: stat) -> String {
        switch info.st_mode & S_IFMT {
        case S_IFLNK: "a symbolic link"
        case S_IFDIR: "a folder"
        case S_IFREG: "a file"
        default: "a special file"
        }
    }
}
