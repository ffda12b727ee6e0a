#define _GNU_SOURCE
#include <fcntl.h>
#include <unistd.h>
#include "worker_system.h"

int worker_syncfs(int fd) {
#if defined(__linux__)
    return syncfs(fd);
#else
    return fsync(fd);
#endif
}

int worker_start_writeback(int fd, long long offset, long long length) {
#if defined(__linux__)
    return sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE);
#else
    (void)fd; (void)offset; (void)length;
    return 0;
#endif
}
