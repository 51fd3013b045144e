/* agent/record/sites.h: the stack table (frames -> stack id, each distinct stack stored once) and the
 * site table ((api, stack id) -> counters). A per-thread cache answers repeated stacks without
 * a lock; first sight of a stack takes the table lock and allocates from the agent's arena
 * (never malloc). Counters are atomics, exact whatever the trace buffers drop. The tables
 * themselves stay inside agent/record/sites.c; readers get copies (struct site_info). */
#ifndef SYNCSPY_SITES_H
#define SYNCSPY_SITES_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "output/model.h"

struct site; /* one (api, stack) pair; never freed while the agent runs */

/* The calling thread's cache of the sites it saw last (its storage is the caller's): a set of
 * SITE_CACHE_WAYS slots for each hash, the newest first, so that two sites of one loop whose
 * hashes share a set do not evict each other at every sync (a direct-mapped cache sent two of
 * the seed-003 loop's syncs a step to the table's lock in some runs: 10.7k instructions a step). */
#define SITE_CACHE_SETS 64
#define SITE_CACHE_WAYS 2
struct site_cache {
    struct site_cache_slot {
        uint64_t hash;
        uint32_t api;
        uint32_t depth;
        struct site *site;
    } set[SITE_CACHE_SETS][SITE_CACHE_WAYS];
};

/* A copy of what a site is and has counted. */
#define SITE_TIDS 16

struct site_info {
    uint32_t id; /* 1-based, in order of creation */
    uint32_t api;
    uint32_t stack_id;      /* 1-based, in order of first sight */
    uint32_t depth;         /* words in the stack */
    bool truncated;         /* deeper than the frame limit */
    const uintptr_t *words; /* the stack, innermost first (collectors/pyframes.h); kept */
    uint64_t count, blocked_ns, max_ns;
    struct rep_phase_raw phase; /* count and blocked_ns with their start-up and last-step parts */
    uint32_t threads;           /* how many threads synced here (at most SITE_TIDS counted) */
    uint64_t pinned; /* syncs right after a copy from or to pinned memory (site_add_pinned) */
};

/* Sets the memory cap of the tables (bytes). Call before the first lookup. */
void sites_init(size_t cap_bytes);

/* The site of (api, pcs[0..depth)) when the cache has it (no lock), else NULL. */
struct site *sites_cached(const struct site_cache *cache, uint32_t api, const uintptr_t *pcs,
                          uint32_t depth);

/* The site of (api, pcs[0..depth)), created on first sight. NULL when the tables are full (the
 * caller counts the sync as unattributed). */
struct site *sites_lookup(struct site_cache *cache, uint32_t api, const uintptr_t *pcs,
                          uint32_t depth, bool truncated);

/* Counts one sync of step `step` made by thread tid at s (lock-free). */
void site_add(struct site *s, uint64_t step, uint64_t blocked_ns, uint32_t tid);
/* One of its syncs came right after a copy from or to pinned host memory (a blocking copy that
 * need not have waited: the hint says non_blocking=True, not pin_memory). */
void site_add_pinned(struct site *s);
/* torch.compile's own work (common/gencode.h gencode_compile_work_file), told by the first
 * capture of the site's stack, while its Python frames run. */
void site_mark_compile_work(struct site *s);
bool site_compile_work(const struct site *s);
uint32_t site_id(const struct site *s);
uint32_t site_stack_id(const struct site *s);
uint64_t site_count(const struct site *s);
void site_info(const struct site *s, struct site_info *out);

/* The site with id `id` into out, under the table lock; false when there is none. */
bool sites_find(uint32_t id, struct site_info *out);

/* Copies at most cap sites (creation order) into out, under the table lock; returns how many. */
size_t sites_snapshot(struct site_info *out, size_t cap);
size_t sites_count(void);
size_t stacks_count(void);

/* The table lock, for the fork handlers (agent/process/fork_locks.h: taken around fork()). */
pthread_mutex_t *sites_table_lock(void);
/* In a fork's child: everything reset (the child starts clean). */
void sites_atfork_child(void);

#endif
