/* agent/process/fork_locks.c: the loops over a list of fork locks (see fork_locks.h). Runs inside
 * fork(), on the forking thread, from pthread_atfork handlers: no malloc, no stdio, no lock
 * but the listed ones. */
#include "agent/process/fork_locks.h"

#include <time.h>

void fork_locks_prepare(const struct fork_lock *locks, size_t n, bool *taken)
{
    for (size_t i = 0; i < n; i++) {
        const struct fork_lock *l = &locks[i];
        taken[i] = false;
        if (l->kind == FORK_LOCK_WAIT) {
            taken[i] = pthread_mutex_lock(l->mutex()) == 0;
        } else if (l->kind == FORK_LOCK_TRY && l->wait_ms > 0) {
            struct timespec until;
            clock_gettime(CLOCK_MONOTONIC, &until);
            until.tv_sec += l->wait_ms / 1000;
            until.tv_nsec += (long)(l->wait_ms % 1000) * 1000000L;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            taken[i] = pthread_mutex_clocklock(l->mutex(), CLOCK_MONOTONIC, &until) == 0;
        } else if (l->kind == FORK_LOCK_TRY) {
            taken[i] = pthread_mutex_trylock(l->mutex()) == 0;
        } else if (l->kind == FORK_LOCK_GATE) {
            l->close();
            taken[i] = true;
        }
    }
}

void fork_locks_parent(const struct fork_lock *locks, size_t n, const bool *taken)
{
    for (size_t i = n; i-- > 0;)
        if (locks[i].kind == FORK_LOCK_GATE)
            locks[i].open();
        else if (taken[i])
            pthread_mutex_unlock(locks[i].mutex());
}

void fork_locks_child(const struct fork_lock *locks, size_t n, const bool *taken)
{
    for (size_t i = n; i-- > 0;) {
        const struct fork_lock *l = &locks[i];
        if (l->kind == FORK_LOCK_FLAG)
            atomic_store(l->flag(), false);
        else if (l->kind == FORK_LOCK_GATE)
            l->reset();
        else if (taken[i])
            pthread_mutex_unlock(l->mutex()); /* held by this thread: released, never re-made */
        else if (l->kind == FORK_LOCK_TRY)
            pthread_mutex_init(l->mutex(), NULL); /* held by a thread the child has not */
    }
}
