/* agent/record/threads.c: the thread registry (see threads.h). threads_register runs on the calling
 * thread inside its first CUDA call: the registry lock and the agent's arenas, no malloc, no
 * stdio. Lock order: the step lock, then this registry lock, then the site table lock. */
#include "agent/record/threads.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/record/arena.h"
#include "collectors/stack_cache.h"

SYNCSPY_TLS _Atomic uint64_t *agent_tls_launches;

#define RING_RECORDS 4096 /* per thread: 256 KiB (32 threads in the default 8 MiB) */
#define RING_BYTES (sizeof(struct ring) + RING_RECORDS * sizeof(struct tw_event))

SYNCSPY_TLS struct agent_tls agent_tls;

/* Taken by the threads' first CUDA call, their exit, the flusher's drains and the readers; around
 * fork() by the fork handlers (agent/process/fork_locks.h), after the step lock. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
#define RETIRED_MAX 64
/* The process's threads, under registry_lock (tally_tables is also read without it). A forked
 * child starts all of it afresh with one memset (threads_atfork_child), so a field added here is
 * reset at fork by construction. */
static struct registry {
    struct thread_state *threads, *free_states;
    uint64_t retired_launches; /* launches of threads that exited */
    /* The threads that exited after syncing: each kept by name (a torch engine thread may end
     * at the interpreter's exit, before the report), the ones beyond RETIRED_MAX together. */
    struct thread_info retired[RETIRED_MAX + 1];
    size_t nretired;
    struct tally_table *_Atomic tally_tables; /* every table made; read without the lock */
    uint32_t ntally_tables;
} reg;
/* Memory of the threads' states and rings (the child unmaps the parent's), and the key whose
 * destructor retires a thread: kept at fork. */
static struct arena thread_arena = {.cap_bytes = 64u << 20};
static struct arena ring_arena; /* cap: SYNCSPY_BUFFER_MB */
static pthread_key_t thread_key;

/* pthread key destructor: the thread is exiting; keep its launches, recycle its state. */
static void thread_exit(void *p)
{
    struct thread_state *ts = p;
    pthread_mutex_lock(&registry_lock);
    reg.retired_launches += atomic_load_explicit(&ts->launches, memory_order_relaxed);
    atomic_store_explicit(&ts->launches, 0, memory_order_relaxed);
    struct rep_phase_raw r = phase_raw(&ts->syncs);
    if (r.count && reg.nretired < RETIRED_MAX) {
        struct thread_info *t = &reg.retired[reg.nretired++];
        t->tid = ts->tid;
        memcpy(t->name, ts->name, sizeof t->name);
        t->phase = r;
    } else if (r.count) { /* the others together, without their open step's part */
        struct rep_phase_raw *o = &reg.retired[RETIRED_MAX].phase;
        snprintf(reg.retired[RETIRED_MAX].name, sizeof reg.retired[0].name, "(others)");
        o->count += r.count;
        o->ns += r.ns;
        o->startup_count += r.startup_count;
        o->startup_ns += r.startup_ns;
    }
    memset(&ts->syncs, 0, sizeof ts->syncs);
    if (ts->tally)
        ts->tally->owned = false; /* its next thread takes it once its epoch is over */
    ts->tally = NULL;
    ts->live = false;
    ts->next_free = reg.free_states;
    reg.free_states = ts;
    pthread_mutex_unlock(&registry_lock);
    agent_tls.ts = NULL;
    agent_tls_launches = NULL;
    stack_cache_thread_exit(); /* its cached stacks' storage, for the next thread */
}

void threads_init(size_t ring_bytes)
{
    /* SYNCSPY_BUFFER_MB / 256 KiB rings, each in a mapping of its own (a page and the arena's
     * chunk header over its 256 KiB): 1 MiB chunks would hold 3, and 8 MiB serve 24 threads. */
    size_t rings = ring_bytes / (RING_RECORDS * sizeof(struct tw_event));
    ring_arena.min_chunk_bytes = 1;
    ring_arena.cap_bytes = rings * (RING_BYTES + 4096 + 16);
    pthread_key_create(&thread_key, thread_exit);
}

/* A tally table for a thread registering now (registry lock held): one whose thread exited and
 * whose counting epoch is over, else a new one; NULL when the arena is full. */
static struct tally_table *tally_take(uint32_t tid, const char *name)
{
    struct tally_table *t;
    for (t = atomic_load_explicit(&reg.tally_tables, memory_order_relaxed); t; t = t->next)
        if (!t->owned && budget_counts_reusable(t))
            break;
    if (!t && (t = arena_alloc(&thread_arena, sizeof(*t)))) {
        t->index = ++reg.ntally_tables;
        t->next = atomic_load_explicit(&reg.tally_tables, memory_order_relaxed);
        atomic_store_explicit(&reg.tally_tables, t, memory_order_release);
    }
    if (t) {
        t->owned = true;
        /* read only with an epoch the new owner publishes after this (agent/record/budget_counts.c) */
        atomic_store_explicit(&t->tid, tid, memory_order_relaxed);
        memcpy(t->name, name, sizeof t->name);
    }
    return t;
}

struct tally_table *threads_tally_tables(void)
{
    return atomic_load_explicit(&reg.tally_tables, memory_order_acquire);
}

struct thread_state *threads_register(void)
{
    uint32_t tid = (uint32_t)syscall(SYS_gettid);
    char name[16] = "";
    prctl(PR_GET_NAME, name, 0, 0, 0);
    pthread_mutex_lock(&registry_lock);
    struct thread_state *ts = reg.free_states;
    if (ts) {
        reg.free_states = ts->next_free;
    } else if ((ts = arena_alloc(&thread_arena, sizeof(*ts)))) {
        ts->scratch = arena_alloc(&thread_arena, sizeof(*ts->scratch));
        ts->ring = arena_alloc(&ring_arena, RING_BYTES);
        if (ts->ring)
            ts->ring->mask = RING_RECORDS - 1;
        ts->next = reg.threads;
        reg.threads = ts;
    }
    if (ts) {
        ts->live = true;
        ts->tid = tid;
        memcpy(ts->name, name, sizeof name);
        ts->name[15] = 0;
        ts->tally = tally_take(tid, ts->name);
    }
    pthread_mutex_unlock(&registry_lock);
    if (!ts)
        return NULL;
    agent_tls.ts = ts;
    agent_tls_launches = &ts->launches;
    pthread_setspecific(thread_key, ts);
    return ts;
}

void threads_visit_rings(void (*fn)(struct ring *ring, uint32_t tid, const char *name, void *ctx),
                         void *ctx)
{
    pthread_mutex_lock(&registry_lock);
    for (struct thread_state *ts = reg.threads; ts; ts = ts->next)
        if (ts->ring)
            fn(ts->ring, ts->tid, ts->name, ctx);
    pthread_mutex_unlock(&registry_lock);
}

uint64_t threads_launches_total(void)
{
    pthread_mutex_lock(&registry_lock);
    uint64_t n = reg.retired_launches;
    for (struct thread_state *ts = reg.threads; ts; ts = ts->next)
        n += atomic_load_explicit(&ts->launches, memory_order_relaxed);
    pthread_mutex_unlock(&registry_lock);
    return n;
}

/* Copies at most cap; returns how many there are (more than cap: the caller's array was short). */
static size_t snapshot(struct thread_info *out, size_t cap)
{
    size_t n = 0;
    pthread_mutex_lock(&registry_lock);
    for (struct thread_state *ts = reg.threads; ts; ts = ts->next) {
        if (!ts->live || !atomic_load_explicit(&ts->syncs.count, memory_order_relaxed))
            continue;
        if (n < cap) {
            out[n].tid = ts->tid;
            memcpy(out[n].name, ts->name, sizeof out[n].name);
            out[n].phase = phase_raw(&ts->syncs);
        }
        n++;
    }
    for (size_t i = 0; i < reg.nretired; i++, n++)
        if (n < cap)
            out[n] = reg.retired[i];
    if (reg.retired[RETIRED_MAX].phase.count) {
        if (n < cap)
            out[n] = reg.retired[RETIRED_MAX];
        n++;
    }
    pthread_mutex_unlock(&registry_lock);
    return n;
}

struct thread_info *threads_snapshot(size_t *n)
{
    size_t cap = 64;
    *n = 0;
    for (int tries = 0; tries < 8; tries++) { /* threads that start meanwhile: a larger array */
        struct thread_info *t = malloc(cap * sizeof *t);
        if (!t)
            return NULL;
        size_t total = snapshot(t, cap);
        if (total <= cap) {
            *n = total;
            return t;
        }
        free(t);
        cap = total + 64;
    }
    return NULL;
}

void threads_dropped(uint64_t *syncs, uint64_t *launches)
{
    *syncs = *launches = 0;
    pthread_mutex_lock(&registry_lock);
    for (struct thread_state *ts = reg.threads; ts; ts = ts->next)
        if (ts->ring) {
            *syncs += atomic_load_explicit(&ts->ring->dropped_syncs, memory_order_relaxed);
            *launches += atomic_load_explicit(&ts->ring->dropped_launches, memory_order_relaxed);
        }
    pthread_mutex_unlock(&registry_lock);
}

pthread_mutex_t *threads_registry_lock(void)
{
    return &registry_lock;
}

/* The child's one thread (the one that forked; the fork handlers released the lock it held):
 * the parent's threads, their states and rings are gone, the registry starts empty. */
void threads_atfork_child(void)
{
    arena_release(&thread_arena);
    arena_release(&ring_arena);
    memset(&reg, 0, sizeof reg);
    agent_tls.ts = NULL;
    agent_tls_launches = NULL;
    pthread_setspecific(thread_key, NULL);
}
