#define _GNU_SOURCE
#include <unistd.h>
#include "worker_system.h"

int worker_syncfs(int fd) {
#if defined(__linux__)
    return syncfs(fd);
#else
    return fsync(fd);
#endif
}
