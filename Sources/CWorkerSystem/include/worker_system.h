#ifndef WORKER_CSYSTEM_H
#define WORKER_CSYSTEM_H

#include "worker_lock_wait.h"

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

/// Gives memory the allocator holds free back to the system (glibc's malloc_trim; nothing
/// elsewhere): freed small blocks otherwise stay in the process's resident set.
void worker_release_free_memory(void);

/// SIGINT and SIGTERM as a request to stop, for commands that download: the first of them is
/// noted (`worker_stop_signal`) and a byte written to a pipe, whose read end this returns for a
/// thread to wait on (-1 if no pipe could be made; the same descriptor when called again). A
/// second one ends the process at once by its default action. A signal ignored when this is
/// called (`nohup`, a background job of a shell without job control) stays ignored. Handlers run
/// with SA_RESTART, so that reads and writes elsewhere are not cut short by them.
int worker_stop_signals_install(void);

/// The read end of the pipe `worker_stop_signals_install` writes to, made now if it is not yet
/// (-1 if it cannot be), without handling any signal: a thread can wait on it before the handlers
/// are installed.
int worker_stop_signals_pipe(void);

/// The first SIGINT or SIGTERM received since `worker_stop_signals_install`; 0 for none.
int worker_stop_signal(void);

/// Ends the process by `signal`'s default action (terminate), as if the signal had never been
/// handled, so that a shell or service manager sees the process killed by it (a shell running a
/// script stops the script on a child killed by SIGINT, not on one that exited with 130). Falls
/// back to _exit(128 + signal).
void worker_end_by_signal(int signal);

/// Asks the CPU to start loading the cache line at `address` (for writing): a hint, never a fault.
static inline void worker_prefetch(const void *address) {
    __builtin_prefetch(address, 1, 3);
}

#include <stdint.h>

/// The object a thread of the program's own works for (an engine), as that thread set it first
/// thing: a thread-local value, so each thread reads only what it wrote itself and nothing is
/// shared between threads. 0 on a thread that never set one.
extern _Thread_local uintptr_t worker_thread_owner_id;

static inline uintptr_t worker_thread_owner(void) {
    return worker_thread_owner_id;
}

static inline void worker_set_thread_owner(uintptr_t owner) {
    worker_thread_owner_id = owner;
}

#endif
