#define _GNU_SOURCE
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/resource.h>
#include "worker_system.h"
#if defined(__linux__)
#include <sys/vfs.h>
#endif

int worker_syncfs(int fd) {
#if defined(__linux__)
    return syncfs(fd);
#else
    return fsync(fd);
#endif
}

long long worker_fs_type(const char *path) {
#if defined(__linux__)
    struct statfs info;
    if (statfs(path, &info) != 0) return -1;
    return (long long)(unsigned long)info.f_type;
#else
    (void)path;
    return -1;
#endif
}

void worker_name_thread(const char *name) {
#if defined(__linux__)
    pthread_setname_np(pthread_self(), name);
#else
    pthread_setname_np(name);
#endif
}

int worker_renameat_noreplace(int fromFolder, const char *from, int toFolder, const char *to) {
#if defined(__linux__) && defined(RENAME_NOREPLACE)
    return renameat2(fromFolder, from, toFolder, to, RENAME_NOREPLACE);
#else
    (void)fromFolder; (void)from; (void)toFolder; (void)to;
    errno = ENOSYS;
    return -1;
#endif
}

int worker_rename_noreplace(const char *from, const char *to) {
#if defined(__linux__) && defined(RENAME_NOREPLACE)
    return renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE);
#else
    (void)from; (void)to;
    errno = ENOSYS;
    return -1;
#endif
}

void worker_reserve_descriptors(int count) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY && (rlim_t)count > limit.rlim_cur) {
        count = (int)limit.rlim_cur;
    }
    // The kernel's first table holds 64: nothing to do below that.
    if (count <= 64) return;
    // Any open standard descriptor will do (a program may be started with some closed).
    for (int fd = 0; fd <= 2; fd++) {
        int high = fcntl(fd, F_DUPFD_CLOEXEC, count - 1);
        if (high >= 0) {
            close(high);
            return;
        }
    }
}
