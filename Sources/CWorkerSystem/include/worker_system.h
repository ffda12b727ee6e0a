#ifndef WORKER_CSYSTEM_H
#define WORKER_CSYSTEM_H

/// syncfs(2): flush every dirty page and inode of the file system that holds `fd`.
/// Declared by glibc only under _GNU_SOURCE, which Swift's Glibc module does not set.
int worker_syncfs(int fd);

#endif
