#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/resource.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include "worker_system.h"
#if defined(__linux__)
#include <sys/vfs.h>
#endif

_Thread_local uintptr_t worker_thread_owner_id = 0;

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

void worker_release_free_memory(void) {
#if defined(__GLIBC__)
    malloc_trim(0);
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

static volatile sig_atomic_t stop_signal = 0;
static int stop_pipe[2] = {-1, -1};

static void on_stop_signal(int signal_number) {
    if (stop_signal != 0) {
        // The second: what the signal would have done without a handler, once this returns (the
        // signal is blocked while its handler runs).
        signal(signal_number, SIG_DFL);
        raise(signal_number);
        return;
    }
    stop_signal = signal_number;
    int saved = errno;
    unsigned char byte = (unsigned char)signal_number;
    ssize_t written = write(stop_pipe[1], &byte, 1);
    (void)written;
    errno = saved;
}

int worker_stop_signals_pipe(void) {
    if (stop_pipe[0] >= 0) return stop_pipe[0];
    if (pipe2(stop_pipe, O_CLOEXEC) != 0) {
        stop_pipe[0] = stop_pipe[1] = -1;
        return -1;
    }
    return stop_pipe[0];
}

int worker_stop_signals_install(void) {
    static int installed = 0;
    if (installed) return stop_pipe[0];
    if (worker_stop_signals_pipe() < 0) return -1;
    installed = 1;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    sigaddset(&action.sa_mask, SIGINT);
    sigaddset(&action.sa_mask, SIGTERM);
    action.sa_flags = SA_RESTART;
    const int signals[] = {SIGINT, SIGTERM};
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) {
        struct sigaction current;
        if (sigaction(signals[i], NULL, &current) == 0 && current.sa_handler == SIG_IGN) continue;
        sigaction(signals[i], &action, NULL);
    }
    return stop_pipe[0];
}

int worker_stop_signal(void) {
    return stop_signal;
}

void worker_end_by_signal(int signal_number) {
    signal(signal_number, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signal_number);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    raise(signal_number);
    _exit(128 + signal_number);
}
