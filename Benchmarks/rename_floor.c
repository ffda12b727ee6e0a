/* The floor for installing a downloaded object: N files of 1 KiB written and moved into 256
 * fan-out folders, four ways, per file (wall and CPU of this process):
 *   0  written in tmp/, renamed into its fan-out folder (what worker does)
 *   1  written under a temporary name in its fan-out folder, renamed there (same folder)
 *   2  written unnamed (O_TMPFILE) in its fan-out folder, then linked (linkat through /proc)
 *   3  written straight under its final name (no move; not safe: a reader could see it half
 *      written, a crash leaves it so): the cost of the move, by difference
 *   cc -O2 -o rename_floor rename_floor.c && ./rename_floor MODE N /dev/shm/DIR   (DIR new) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double cpu_seconds(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

static int open_folder(const char *root, const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, name);
    mkdir(path, 0755);
    return open(path, O_RDONLY | O_DIRECTORY);
}

/* A file of `body` opened at `name` in `folder` with `flags`; its descriptor, or -1. */
static int write_body(int folder, const char *name, int flags, const char *body, size_t size) {
    int fd = openat(folder, name, O_WRONLY | O_CLOEXEC | flags, 0644);
    if (fd < 0 || write(fd, body, size) != (ssize_t)size) { perror("write"); return -1; }
    return fd;
}

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: rename_floor MODE N DIR\n"); return 2; }
    int mode = atoi(argv[1]), count = atoi(argv[2]);
    const char *root = argv[3];
    char body[1024], part[64], name[80], link[64];
    memset(body, 'x', sizeof body);
    mkdir(root, 0755);
    int tmp = open_folder(root, "tmp");
    int objects = open_folder(root, "objects");
    int folders[256];
    for (int slot = 0; slot < 256; slot++) {
        char hex[3];
        snprintf(hex, sizeof hex, "%02x", slot);
        mkdirat(objects, hex, 0755);
        folders[slot] = openat(objects, hex, O_RDONLY | O_DIRECTORY);
    }
    double cpu = cpu_seconds();
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (int index = 0; index < count; index++) {
        int slot = (int)(((unsigned)index * 2654435761u) >> 24), folder = folders[slot], fd;
        snprintf(name, sizeof name, "%02x%062x", slot, index);
        snprintf(part, sizeof part, ".part-%d", index);
        switch (mode) {
        case 0:
            if ((fd = write_body(tmp, part, O_CREAT | O_EXCL, body, sizeof body)) < 0) return 1;
            close(fd);
            if (renameat(tmp, part, folder, name) != 0) { perror("renameat"); return 1; }
            break;
        case 1:
            if ((fd = write_body(folder, part, O_CREAT | O_EXCL, body, sizeof body)) < 0) return 1;
            close(fd);
            if (renameat(folder, part, folder, name) != 0) { perror("renameat"); return 1; }
            break;
        case 2:
            if ((fd = write_body(folder, ".", O_TMPFILE, body, sizeof body)) < 0) return 1;
            snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
            if (linkat(AT_FDCWD, link, folder, name, AT_SYMLINK_FOLLOW) != 0) { perror("linkat"); return 1; }
            close(fd);
            break;
        default:
            if ((fd = write_body(folder, name, O_CREAT | O_EXCL, body, sizeof body)) < 0) return 1;
            close(fd);
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    double wall = (end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9;
    printf("mode %d: %.2f us a file wall, %.2f us CPU\n", mode, wall * 1e6 / count, (cpu_seconds() - cpu) * 1e6 / count);
    return 0;
}
