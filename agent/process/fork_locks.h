/* agent/process/fork_locks.h: the locks a fork() must leave usable in the child, each listed with how the
 * fork treats it, and the loops that agent/process/lifecycle.c's pthread_atfork handlers (the agent's and
 * the collectors' locks, agent_fork_locks) and entry/start.c's (the entry layer's) run over their
 * lists. glibc runs prepare, then parent or child, on the forking thread under its own atfork
 * lock: one fork at a time, so `taken` is the handlers' own. */
#ifndef SYNCSPY_FORK_LOCKS_H
#define SYNCSPY_FORK_LOCKS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

enum fork_lock_kind {
    /* Held only for bounded work that waits on no other thread, no loader lock, no I/O that can
     * stall: prepare waits for it (in the list's order, the lock order), so the child gets what
     * it guards whole and unlocks it. */
    FORK_LOCK_WAIT,
    /* Held across work that may wait (a drain's writes and the loader's lock, a request waiting
     * for the flusher, CUPTI's loading): prepare takes it only when it is free, or within
     * wait_ms. Where it could not, its holder is a thread the child does not have: the child
     * initializes it anew (as glibc's fork does the loader's lock it cannot release) and its
     * module starts afresh what it guards. */
    FORK_LOCK_TRY,
    /* A lock whose users only ever try it (an atomic flag): never taken by prepare (a capture
     * meanwhile would go without); the child clears it, whoever held it. */
    FORK_LOCK_FLAG,
    /* A gate around sections that may hold a lock of glibc's that its fork does not reset
     * (collectors/loader_gate.h): prepare closes it, waiting for the sections open on other
     * threads; parent opens it again, child resets it. */
    FORK_LOCK_GATE,
};

struct fork_lock {
    const char *name;
    enum fork_lock_kind kind;
    pthread_mutex_t *(*mutex)(void); /* WAIT, TRY */
    _Atomic bool *(*flag)(void);     /* FLAG */
    int wait_ms;                     /* TRY: how long prepare may wait for it (0: not at all) */
    void (*close)(void), (*open)(void), (*reset)(void); /* GATE: prepare, parent, child */
};

/* prepare: in list order; taken[i] says whether locks[i] is held by the forking thread. */
void fork_locks_prepare(const struct fork_lock *locks, size_t n, bool *taken);
/* parent: the taken ones released, in reverse order. */
void fork_locks_parent(const struct fork_lock *locks, size_t n, const bool *taken);
/* child (its one thread): the taken ones released, the others made free. */
void fork_locks_child(const struct fork_lock *locks, size_t n, const bool *taken);

/* The agent's and the collectors' locks, in the lock order (agent/process/lifecycle.c): for the tests,
 * which hold each one while forking. */
const struct fork_lock *agent_fork_locks(size_t *n);

#endif
