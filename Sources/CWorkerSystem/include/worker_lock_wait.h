#ifndef WORKER_LOCK_WAIT_H
#define WORKER_LOCK_WAIT_H

/// A flock(2) another process holds, waited for by a thread of its own that blocks in the call:
/// the wait ends the moment the lock is let go, with nothing looking again on a clock. The
/// waiter may give up (`worker_lock_wait_cancel`): the thread is interrupted by a signal whose
/// handler does nothing but cut the call short (EINTR), and lets go of a lock it got meanwhile.
typedef struct worker_lock_wait worker_lock_wait;

/// Starts waiting for `operation` (LOCK_EX or LOCK_SH) on `fd`. `done` is called once, on the
/// waiting thread, with 0 when the lock is held, ECANCELED when the wait was given up, or the
/// errno of a failed flock. NULL (errno set) when no thread could be started; `done` is then
/// never called.
worker_lock_wait *worker_lock_wait_start(int fd, int operation, void (*done)(void *context, int result),
                                         void *context);

/// Gives the wait up; returns once the thread has left flock(2) (so `fd` may be closed). A wait
/// that has already ended is left as it ended.
void worker_lock_wait_cancel(worker_lock_wait *wait);

/// Blocks the caller up to `seconds` for the wait to end (a caller that is not async); 1 when it
/// ended, 0 when the time ran out first.
int worker_lock_wait_for(worker_lock_wait *wait, double seconds);

/// Waits for the thread to end and frees the wait; call once, after `done` was called.
void worker_lock_wait_free(worker_lock_wait *wait);

#endif
