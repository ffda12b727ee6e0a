#define _GNU_SOURCE
#include <pthread.h>
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
