#define _GNU_SOURCE
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
