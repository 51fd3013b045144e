/* agent/sites.h: the stack table (frames -> stack id, each distinct stack stored once) and the
 * site table ((api, stack id) -> counters). A per-thread cache answers repeated stacks without
 * a lock; first sight of a stack takes the table lock and allocates from the agent's arena
 * (never malloc). Counters are atomics, exact whatever the trace buffers drop. */
#ifndef SYNCSPY_SITES_H
#define SYNCSPY_SITES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uthash.h>

struct stack_rec {
    UT_hash_handle hh;
    uint64_t hash;
    uint32_t id;       /* 1-based, in order of first sight */
    uint32_t depth;    /* frames in pcs */
    bool truncated;    /* deeper than the frame limit */
    bool written;      /* in the trace file already (the flusher's) */
    uintptr_t pcs[];   /* return addresses, innermost first */
};

struct site_key {
    uint32_t api;
    uint32_t stack_id;
};

struct site {
    UT_hash_handle hh;
    struct site_key key;
    uint32_t id;       /* 1-based, in order of creation */
    struct stack_rec *stack;
    struct site *next; /* every site, in order of creation */
    _Atomic uint64_t count;
    _Atomic uint64_t blocked_ns;
    _Atomic uint64_t max_ns;
    uint64_t flushed_count; /* count in the last SITE_TOTALS record (the flusher's) */
};

#define SITE_CACHE_SLOTS 64
struct site_cache_slot {
    uint64_t hash;
    uint32_t api;
    uint32_t depth;
    struct site *site;
};
struct site_cache {
    struct site_cache_slot slot[SITE_CACHE_SLOTS];
};

/* Sets the memory cap of the tables (bytes). Call before the first lookup. */
void sites_init(size_t cap_bytes);

/* The site of (api, pcs[0..depth)), created on first sight. NULL when the tables are full (the
 * caller counts the sync as unattributed). */
struct site *sites_lookup(struct site_cache *cache, uint32_t api, const uintptr_t *pcs,
                          uint32_t depth, bool truncated);

static inline void site_add(struct site *s, uint64_t blocked_ns)
{
    atomic_fetch_add_explicit(&s->count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->blocked_ns, blocked_ns, memory_order_relaxed);
    uint64_t m = atomic_load_explicit(&s->max_ns, memory_order_relaxed);
    while (blocked_ns > m &&
           !atomic_compare_exchange_weak_explicit(&s->max_ns, &m, blocked_ns, memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

/* Copies at most cap site pointers (creation order) into out, under the table lock; returns
 * how many. Sites are never freed while the agent runs. */
size_t sites_snapshot(struct site **out, size_t cap);
size_t sites_count(void);
size_t stacks_count(void);

/* Fork: prepare takes the table lock, parent releases it, child resets everything (the child
 * starts clean). */
void sites_atfork_prepare(void);
void sites_atfork_parent(void);
void sites_atfork_child(void);

#endif
