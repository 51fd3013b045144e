/* tests/fork_quiet.h: the program's worker threads parked at fork, for ASan runs (below). */
#ifndef SYNCSPY_TESTS_FORK_QUIET_H
#define SYNCSPY_TESTS_FORK_QUIET_H

#include <pthread.h>
#include <stdbool.h>

/* Fork quiescence, for a sanitizer's run only: GCC 12's libasan keeps no allocator lock across
 * fork(), so a child forked while another thread of the program frees may hang in its first
 * malloc, with the agent or without.
 * Then the program's worker threads park at a loop boundary (fork_quiet_point) from the fork's
 * prepare handler to its parent or child handler; otherwise nothing of this runs and the fork
 * comes wherever the threads are. A worker calls fork_quiet_enter first and fork_quiet_leave
 * last; main calls fork_quiet_start before starting them, after its first CUDA call (fork
 * handlers run newest first: these must park the threads before the simulator's, registered at
 * its first use, take its locks). Used by tests/progs/ (HARM_FORK_QUIESCE=1, set by the e2e
 * tests of an ASan build) and tests/unit/test_fork_locks.c (its ASan build). */
static struct {
    pthread_mutex_t m;
    pthread_cond_t c;
    bool on, pausing;
    int active, parked;
} fork_quiet = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false, 0, 0};

static inline void fork_quiet_prepare(void)
{
    pthread_mutex_lock(&fork_quiet.m);
    fork_quiet.pausing = true;
    while (fork_quiet.parked < fork_quiet.active)
        pthread_cond_wait(&fork_quiet.c, &fork_quiet.m);
    pthread_mutex_unlock(&fork_quiet.m);
}

static inline void fork_quiet_parent(void)
{
    pthread_mutex_lock(&fork_quiet.m);
    fork_quiet.pausing = false;
    pthread_cond_broadcast(&fork_quiet.c);
    pthread_mutex_unlock(&fork_quiet.m);
}

static inline void fork_quiet_child(void) /* the workers are the parent's */
{
    pthread_mutex_init(&fork_quiet.m, NULL);
    pthread_cond_init(&fork_quiet.c, NULL);
    fork_quiet.pausing = false;
    fork_quiet.active = fork_quiet.parked = 0;
}

/* on: park the workers at each fork from now on (false: nothing of this runs). Registered
 * after the agent's and the simulator's handlers, these run before them (newest first). */
static inline void fork_quiet_start(bool on)
{
    fork_quiet.on = on;
    if (on)
        pthread_atfork(fork_quiet_prepare, fork_quiet_parent, fork_quiet_child);
}

static inline void fork_quiet_count(int delta)
{
    if (!fork_quiet.on)
        return;
    pthread_mutex_lock(&fork_quiet.m);
    fork_quiet.active += delta;
    pthread_cond_broadcast(&fork_quiet.c);
    pthread_mutex_unlock(&fork_quiet.m);
}

static inline void fork_quiet_enter(void)
{
    fork_quiet_count(1);
}

static inline void fork_quiet_leave(void)
{
    fork_quiet_count(-1);
}

static inline void fork_quiet_point(void)
{
    if (!fork_quiet.on)
        return;
    pthread_mutex_lock(&fork_quiet.m);
    if (fork_quiet.pausing) {
        fork_quiet.parked++;
        pthread_cond_broadcast(&fork_quiet.c);
        while (fork_quiet.pausing)
            pthread_cond_wait(&fork_quiet.c, &fork_quiet.m);
        fork_quiet.parked--;
    }
    pthread_mutex_unlock(&fork_quiet.m);
}

#endif
