#ifndef WORKER_CSYSTEM_H
#define WORKER_CSYSTEM_H

/// syncfs(2): flush every dirty page and inode of the file system that holds `fd`.
/// Declared by glibc only under _GNU_SOURCE, which Swift's Glibc module does not set.
int worker_syncfs(int fd);

/// Starts writeback of a byte range of `fd` without waiting for it (sync_file_range(2) with
/// SYNC_FILE_RANGE_WRITE on Linux; nothing elsewhere). Not a durability guarantee by itself:
/// the batch flush still follows, it only finds less left to write.
int worker_start_writeback(int fd, long long offset, long long length);

#endif
