/* agent/record/threads.h: per-thread state. One struct per thread that made a CUDA call, created on its
 * first one (a lock on that first sight only), its ring carved from SYNCSPY_BUFFER_MB, recycled
 * by a pthread-key destructor when the thread exits (its launches are kept). The thread-local
 * part (agent_tls) holds the marks of the interposed call and of the agent work in progress. For the agent's own
 * modules; the entry layer sees only agent/record/core.h. */
#ifndef SYNCSPY_THREADS_H
#define SYNCSPY_THREADS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "output/phase_counter.h"
#include "agent/record/ring.h"
#include "agent/record/sites.h"
#include "agent/record/budget_counts.h"
#include "agent/record/capture_memo.h"
#include "collectors/native_stack.h"
#include "collectors/pyframes.h"
#include "common/compiler.h"

struct agent_mark; /* agent/record/core.h: an interposed call's or agent work's mark */

/* A sync's capture buffers (agent/record/core.c), ~45 KiB with the capture memo: the thread's,
 * made with its state, so that a capture takes little of the program's stack (issue 22: a
 * thread with a 32 KiB stack crashed inside the agent). busy: a capture is using them (a second
 * one, from a signal handler that interrupted it, goes without a stack). */
struct capture_scratch {
    bool busy;
    void *raw[NATIVE_STACK_RAW_MAX];
    uintptr_t native[NATIVE_STACK_MAX];
    struct py_raw_frame py[PYFRAMES_MAX];
    /* room for the backward sections too: a node's forward stack and its caller's */
    uintptr_t words[NATIVE_STACK_MAX + 6 * PYFRAMES_MAX];
    struct capture_memo memo; /* the thread's last captures and their sites */
};

struct thread_state {
    _Atomic uint64_t launches; /* written only by the owning thread */
    struct thread_state *next; /* every thread_state ever made (registry) */
    struct thread_state *next_free;
    bool live;
    uint32_t tid;
    char name[16];     /* the thread's name at its first CUDA call */
    struct ring *ring; /* NULL when SYNCSPY_BUFFER_MB had no room left */
    struct site_cache cache;
    struct phase_counter syncs; /* its syncs and blocked ns (written by the owning thread) */
    struct tally_table
        *tally; /* its sync budget counts (agent/record/budget_counts.h); NULL: none made */
    struct capture_scratch *scratch; /* NULL when the arena had no room: syncs without stacks */
};

/* A copy of one thread's counts (tid 0: the threads that exited beyond those kept by name). */
struct thread_info {
    uint32_t tid;
    char name[16];
    struct rep_phase_raw phase;
};

struct agent_tls {
    struct thread_state *ts;
    /* The interposed CUDA call in progress (its mark on the entry point's stack, from before the
     * real call until after it): a CUDA call made inside it (the runtime's own, a CUPTI callback's
     * driver call) is not the program's to record again. */
    struct agent_mark *call;
    uint64_t call_cookie;
    /* Agent code running (a sync being recorded, a step mark, the first CUDA call's start, the
     * exit path): a CUDA call made from inside the agent (the unwinder, the symbolizer) is
     * forwarded untouched instead of recursing into the agent, cancellation is off, and the
     * agent's SIGTERM/SIGINT handler defers the signal until the work ends. */
    struct agent_mark *work;
    uint64_t work_cookie;
    uint64_t seq;      /* the last cookie handed out */
    int work_cancel;   /* the cancel state the work found, put back when it ends */
    bool agent_thread; /* the agent's own thread (the flusher): all agent work, for good */
    /* pyhook_poll asked the agent's Python thread for the step hook: the CUDA call waits for it
     * at its end (agent/step/pyhook.h pyhook_wait_slow). In the padding: every thread's static TLS is
     * carved from its stack. */
    bool pyhook_wait;
    int pending_signal; /* a fatal signal that arrived during agent work: raised when it ends */
};
extern SYNCSPY_TLS struct agent_tls agent_tls;

/* The calling thread's launch counter (its state's), NULL until its first CUDA call and after it
 * exits: set here, read inline by the launch entry points (declared again in
 * agent/record/core.h, the one header the entry layer sees). */
extern SYNCSPY_TLS _Atomic uint64_t *agent_tls_launches;

/* At the agent's start: the rings' memory cap (bytes) and the thread-exit key. */
void threads_init(size_t ring_bytes);

/* Registers the calling thread (inside agent work, signals held): its state, or NULL when none could be made. */
struct thread_state *threads_register(void);

/* Calls fn for every thread's ring (threads that exited included, until reused) with the tid and
 * name of its thread, under the registry lock: fn must be quick and must not call back into the
 * agent. */
void threads_visit_rings(void (*fn)(struct ring *ring, uint32_t tid, const char *name, void *ctx),
                         void *ctx);

/* Records the rings had no room for, so far (not those of threads without a ring:
 * agent_records_without_ring). Takes the registry lock. */
void threads_dropped(uint64_t *syncs, uint64_t *launches);

/* Launches of every thread so far (those that exited included). Takes the registry lock. */
uint64_t threads_launches_total(void);

/* Every thread that synced (live ones, then those that exited), in an array to free(); *n how
 * many (NULL, 0 when memory ran out). Takes the registry lock; not for a recording path (it
 * allocates: the flusher and the exit path). */
struct thread_info *threads_snapshot(size_t *n);

/* The tally tables of every thread ever registered, newest first (t->next), without a lock:
 * tables are never freed while the process runs. */
struct tally_table *threads_tally_tables(void);

/* The registry lock, for the fork handlers (agent/process/fork_locks.h: taken around fork()). */
pthread_mutex_t *threads_registry_lock(void);
/* In a fork's child: it forgets every thread (it has one). */
void threads_atfork_child(void);

#endif
