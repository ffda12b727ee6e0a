#ifndef WORKER_CSYSTEM_H
#define WORKER_CSYSTEM_H

/// syncfs(2): flush every dirty page and inode of the file system that holds `fd`.
/// Declared by glibc only under _GNU_SOURCE, which Swift's Glibc module does not set.
int worker_syncfs(int fd);

/// statfs(2)'s f_type (the file system's magic number) for `path`; -1 on error.
/// <sys/vfs.h> is not part of Swift's Glibc module.
long long worker_fs_type(const char *path);

/// Names the calling thread (seen in `top -H`, `perf`, `/proc/PID/task/*/comm`); at most 15 bytes.
/// pthread_setname_np is declared by glibc only under _GNU_SOURCE.
void worker_name_thread(const char *name);

/// rename(2) that fails with EEXIST instead of replacing `to` (renameat2 with RENAME_NOREPLACE).
/// Where the kernel or file system lacks it: -1 with errno EINVAL or ENOSYS.
int worker_rename_noreplace(const char *from, const char *to);

/// The same, with each name relative to a folder's descriptor (renameat2).
int worker_renameat_noreplace(int fromFolder, const char *from, int toFolder, const char *to);

/// Grows the process's descriptor table to hold `count` descriptors (at most the soft
/// RLIMIT_NOFILE) by duplicating a standard descriptor that high and closing the copy. Meant for
/// the start of the program, while it has one thread: the kernel grows a table that threads share
/// only after an RCU grace period (synchronize_rcu in expand_fdtable, several milliseconds, once
/// per doubling past 64), which a run that opens its sockets and temporary files on many threads
/// would otherwise pay in the middle of its downloads. The table never shrinks; the cost is a few
/// kilobytes.
void worker_reserve_descriptors(int count);

/// Asks the CPU to start loading the cache line at `address` (for writing): a hint, never a fault.
static inline void worker_prefetch(const void *address) {
    __builtin_prefetch(address, 1, 3);
}

#endif
