#define _GNU_SOURCE
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
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

int worker_rename_noreplace(const char *from, const char *to) {
#if defined(__linux__) && defined(RENAME_NOREPLACE)
    return renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE);
#else
    (void)from; (void)to;
    errno = ENOSYS;
    return -1;
#endif
}
