/* agent/threads.h: per-thread state. One struct per thread that made a CUDA call, created on its
 * first one (a lock on that first sight only), its ring carved from SYNCSPY_BUFFER_MB, recycled
 * by a pthread-key destructor when the thread exits (its launches are kept). The thread-local
 * part (agent_tls) holds the recursion guard every agent path raises. For the agent's own
 * modules; the entry layer sees only agent/core.h. */
#ifndef SYNCSPY_THREADS_H
#define SYNCSPY_THREADS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/phase.h"
#include "agent/ring.h"
#include "agent/sites.h"
#include "common/compiler.h"

struct thread_state {
    _Atomic uint64_t launches;   /* written only by the owning thread */
    struct thread_state *next;   /* every thread_state ever made (registry) */
    struct thread_state *next_free;
    bool live;
    uint32_t tid;
    char name[16];               /* the thread's name at its first CUDA call */
    struct ring *ring;           /* NULL when SYNCSPY_BUFFER_MB had no room left */
    struct site_cache cache;
    struct phase_counter syncs;  /* its syncs and blocked ns (written by the owning thread) */
};

/* A copy of one thread's counts (tid 0: the threads that exited beyond those kept by name). */
struct thread_info {
    uint32_t tid;
    char name[16];
    struct rep_phase_raw phase;
};

struct agent_tls {
    struct thread_state *ts;
    unsigned guard; /* >0 while this thread runs agent code: a CUDA call made from inside the
                     * agent (e.g. cudaPointerGetAttributes while classifying, or a CUDA-using
                     * library reached through the unwinder's dl_iterate_phdr) is forwarded
                     * untouched instead of recursing into the agent. */
    int saved_errno;
    int pending_signal; /* a fatal signal that arrived while this thread held agent locks */
};
extern SYNCSPY_TLS struct agent_tls agent_tls;

/* At the agent's start: the rings' memory cap (bytes) and the thread-exit key. */
void threads_init(size_t ring_bytes);

/* Registers the calling thread (its guard raised): its state, or NULL when none could be made. */
struct thread_state *threads_register(void);

/* Calls fn for every thread's ring (threads that exited included, until reused) with the tid and
 * name of its thread, under the registry lock: fn must be quick and must not call back into the
 * agent. */
void threads_visit_rings(void (*fn)(struct ring *ring, uint32_t tid, const char *name, void *ctx),
                         void *ctx);

/* Launches of every thread so far (those that exited included). Takes the registry lock. */
uint64_t threads_launches_total(void);

/* The threads that synced (live ones, then those that exited): at most cap into out; returns
 * how many. Takes the registry lock. */
size_t threads_snapshot(struct thread_info *out, size_t cap);

/* Fork: the registry lock around fork(); the child forgets every thread (it has one). */
void threads_atfork_prepare(void);
void threads_atfork_parent(void);
void threads_atfork_child(void);

#endif
