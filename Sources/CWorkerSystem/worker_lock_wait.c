#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/file.h>
#include "worker_lock_wait.h"

struct worker_lock_wait {
    int fd;
    int operation;
    void (*done)(void *, int);
    void *context;
    pthread_t thread;
    /// Posted once by the thread as it ends; each wait that sees it posts it again.
    sem_t ended;
    /// Set by the canceller, read by the thread: under `lock`.
    pthread_mutex_t lock;
    bool cancelled;
};

static bool is_cancelled(worker_lock_wait *wait) {
    pthread_mutex_lock(&wait->lock);
    bool cancelled = wait->cancelled;
    pthread_mutex_unlock(&wait->lock);
    return cancelled;
}

/// The signal that interrupts a waiting thread: a real-time one nothing else here uses.
static int wake_signal(void) { return SIGRTMIN + 4; }

static void on_wake(int signal_number) { (void)signal_number; }

/// The handler, installed once, without SA_RESTART: a flock(2) it interrupts returns EINTR.
static pthread_once_t wake_once = PTHREAD_ONCE_INIT;
static void install_wake(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_wake;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;
    sigaction(wake_signal(), &action, NULL);
}

static void *run_wait(void *argument) {
    worker_lock_wait *wait = argument;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, wake_signal());
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    pthread_setname_np(pthread_self(), "worker-lock");
    int result;
    for (;;) {
        if (is_cancelled(wait)) {
            result = ECANCELED;
            break;
        }
        // A signal that comes between the check above and the call is sent again by the canceller
        // until this thread has ended.
        if (flock(wait->fd, wait->operation) == 0) {
            bool cancelled = is_cancelled(wait);
            if (cancelled) flock(wait->fd, LOCK_UN);
            result = cancelled ? ECANCELED : 0;
            break;
        }
        if (errno != EINTR) {
            result = errno;
            break;
        }
    }
    sem_post(&wait->ended);
    wait->done(wait->context, result);
    return NULL;
}

worker_lock_wait *worker_lock_wait_start(int fd, int operation, void (*done)(void *, int), void *context) {
    pthread_once(&wake_once, install_wake);
    worker_lock_wait *wait = calloc(1, sizeof *wait);
    if (wait == NULL) return NULL;
    wait->fd = fd;
    wait->operation = operation;
    wait->done = done;
    wait->context = context;
    wait->cancelled = false;
    pthread_mutex_init(&wait->lock, NULL);
    sem_init(&wait->ended, 0, 0);
    int status = pthread_create(&wait->thread, NULL, run_wait, wait);
    if (status != 0) {
        sem_destroy(&wait->ended);
        pthread_mutex_destroy(&wait->lock);
        free(wait);
        errno = status;
        return NULL;
    }
    return wait;
}

/// The realtime clock `seconds` from now (what sem_timedwait takes).
static struct timespec from_now(double seconds) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    long long whole = (long long)seconds;
    long long nanoseconds = until.tv_nsec + (long long)((seconds - (double)whole) * 1e9);
    until.tv_sec += whole + nanoseconds / 1000000000;
    until.tv_nsec = nanoseconds % 1000000000;
    return until;
}

/// Whether the thread has ended, waiting for it until `until` (the end is left posted for the
/// next wait).
static bool ended_by(worker_lock_wait *wait, const struct timespec *until) {
    int status;
    do {
        status = sem_timedwait(&wait->ended, until);
    } while (status != 0 && errno == EINTR);
    if (status != 0) return false;
    sem_post(&wait->ended);
    return true;
}

void worker_lock_wait_cancel(worker_lock_wait *wait) {
    pthread_mutex_lock(&wait->lock);
    wait->cancelled = true;
    pthread_mutex_unlock(&wait->lock);
    for (;;) {
        pthread_kill(wait->thread, wake_signal());
        struct timespec until = from_now(0.001);
        if (ended_by(wait, &until)) break;
    }
}

int worker_lock_wait_for(worker_lock_wait *wait, double seconds) {
    struct timespec until = from_now(seconds > 0 ? seconds : 0);
    return ended_by(wait, &until);
}

void worker_lock_wait_free(worker_lock_wait *wait) {
    pthread_join(wait->thread, NULL);
    sem_destroy(&wait->ended);
    pthread_mutex_destroy(&wait->lock);
    free(wait);
}
