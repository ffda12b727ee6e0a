#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
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
    pthread_mutex_t mutex;
    pthread_cond_t ended;
    bool cancelled;
    bool finished;
};

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
        pthread_mutex_lock(&wait->mutex);
        bool cancelled = wait->cancelled;
        pthread_mutex_unlock(&wait->mutex);
        if (cancelled) {
            result = ECANCELED;
            break;
        }
        // A signal that comes between the check above and the call is sent again by the canceller
        // until this thread has ended.
        if (flock(wait->fd, wait->operation) == 0) {
            pthread_mutex_lock(&wait->mutex);
            cancelled = wait->cancelled;
            pthread_mutex_unlock(&wait->mutex);
            if (cancelled) flock(wait->fd, LOCK_UN);
            result = cancelled ? ECANCELED : 0;
            break;
        }
        if (errno != EINTR) {
            result = errno;
            break;
        }
    }
    pthread_mutex_lock(&wait->mutex);
    wait->finished = true;
    pthread_cond_broadcast(&wait->ended);
    pthread_mutex_unlock(&wait->mutex);
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
    pthread_mutex_init(&wait->mutex, NULL);
    pthread_cond_init(&wait->ended, NULL);
    int status = pthread_create(&wait->thread, NULL, run_wait, wait);
    if (status != 0) {
        pthread_cond_destroy(&wait->ended);
        pthread_mutex_destroy(&wait->mutex);
        free(wait);
        errno = status;
        return NULL;
    }
    return wait;
}

/// The realtime clock `seconds` from now (what pthread_cond_timedwait takes).
static struct timespec from_now(double seconds) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    long long whole = (long long)seconds;
    long long nanoseconds = until.tv_nsec + (long long)((seconds - (double)whole) * 1e9);
    until.tv_sec += whole + nanoseconds / 1000000000;
    until.tv_nsec = nanoseconds % 1000000000;
    return until;
}

void worker_lock_wait_cancel(worker_lock_wait *wait) {
    pthread_mutex_lock(&wait->mutex);
    wait->cancelled = true;
    while (!wait->finished) {
        pthread_kill(wait->thread, wake_signal());
        struct timespec until = from_now(0.001);
        pthread_cond_timedwait(&wait->ended, &wait->mutex, &until);
    }
    pthread_mutex_unlock(&wait->mutex);
}

int worker_lock_wait_for(worker_lock_wait *wait, double seconds) {
    struct timespec until = from_now(seconds > 0 ? seconds : 0);
    pthread_mutex_lock(&wait->mutex);
    while (!wait->finished) {
        if (pthread_cond_timedwait(&wait->ended, &wait->mutex, &until) == ETIMEDOUT) break;
    }
    int ended = wait->finished;
    pthread_mutex_unlock(&wait->mutex);
    return ended;
}

void worker_lock_wait_free(worker_lock_wait *wait) {
    pthread_join(wait->thread, NULL);
    pthread_cond_destroy(&wait->ended);
    pthread_mutex_destroy(&wait->mutex);
    free(wait);
}
