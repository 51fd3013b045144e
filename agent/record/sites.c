/* agent/record/sites.c: stack and site tables (see sites.h). Lock order: the step lock, then the
 * thread registry lock, then this table lock (taken last, held only while the tables change). */
#include "agent/record/arena.h"
#include "common/compiler.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

/* uthash allocates from the arena; an exhausted arena makes HASH_ADD fail without exiting. */
static struct arena table_arena;
static bool table_oom;
#define HASH_NONFATAL_OOM 1
#define uthash_malloc(sz) arena_alloc(&table_arena, (sz))
#define uthash_free(ptr, sz) ((void)(ptr), (void)(sz))
#define uthash_nonfatal_oom(obj) (table_oom = true)
#include <uthash.h>

#include "agent/record/sites.h"
#include "output/phase_counter.h"

struct stack_rec {
    UT_hash_handle hh;
    uint64_t hash;
    uint32_t id;     /* 1-based, in order of first sight */
    uint32_t depth;  /* frames in pcs */
    bool truncated;  /* deeper than the frame limit */
    uintptr_t pcs[]; /* return addresses, innermost first */
};

struct site_key {
    uint32_t api;
    uint32_t stack_id;
};

struct site {
    UT_hash_handle hh;
    struct site_key key;
    uint32_t id; /* 1-based, in order of creation */
    struct stack_rec *stack;
    struct site *next;       /* every site, in order of creation */
    struct phase_counter pc; /* its syncs and blocked ns, with their start-up and last-step parts */
    _Atomic uint64_t max_ns;
    /* the threads that synced here (the first SITE_TIDS of them) */
    _Atomic uint32_t tids[SITE_TIDS];
    /* torch.compile's own work (site_mark_compile_work): kept out of the step's and the
     * thread's figures */
    _Atomic bool compile_work;
    _Atomic uint64_t pinned; /* syncs right after a copy from or to pinned memory */
};

/* Taken while the tables change, and by their readers; around fork() by the fork handlers
 * (agent/process/fork_locks.h), after the registry lock. */
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
/* The tables, under table_lock (the counts also read without it). A forked child starts them
 * afresh in one reset (sites_atfork_child), so a field added here is reset at fork by
 * construction. */
static struct tables {
    struct stack_rec *stacks;  /* uthash head, keyed by the pcs bytes */
    struct site *sites;        /* uthash head, keyed by site_key */
    struct site *list, **tail; /* every site, in order of creation */
    _Atomic size_t n_sites, n_stacks;
} tab = {.tail = &tab.list};

void sites_init(size_t cap_bytes)
{
    table_arena.cap_bytes = cap_bytes;
}

static uint64_t hash_pcs(const uintptr_t *pcs, uint32_t depth, uint32_t api)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ ((uint64_t)depth << 32) ^ api;
    for (uint32_t i = 0; i < depth; i++) {
        h ^= pcs[i];
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 33;
    }
    return h;
}

static struct stack_rec *stack_intern(const uintptr_t *pcs, uint32_t depth, bool truncated,
                                      uint64_t hash)
{
    struct stack_rec *st;
    size_t keylen = depth * sizeof(uintptr_t);
    HASH_FIND(hh, tab.stacks, pcs, keylen, st);
    if (st)
        return st;
    st = arena_alloc(&table_arena, sizeof(*st) + keylen);
    if (!st)
        return NULL;
    memcpy(st->pcs, pcs, keylen);
    st->depth = depth;
    st->hash = hash;
    st->truncated = truncated;
    st->id = (uint32_t)tab.n_stacks + 1;
    table_oom = false;
    HASH_ADD_KEYPTR(hh, tab.stacks, st->pcs, keylen, st);
    if (table_oom)
        return NULL;
    tab.n_stacks++;
    return st;
}

static struct site *site_intern(uint32_t api, struct stack_rec *st)
{
    struct site_key key = {.api = api, .stack_id = st->id};
    struct site *s;
    HASH_FIND(hh, tab.sites, &key, sizeof key, s);
    if (s)
        return s;
    s = arena_alloc(&table_arena, sizeof(*s));
    if (!s)
        return NULL;
    s->key = key;
    s->id = (uint32_t)tab.n_sites + 1;
    s->stack = st;
    table_oom = false;
    HASH_ADD(hh, tab.sites, key, sizeof key, s);
    if (table_oom)
        return NULL;
    *tab.tail = s;
    tab.tail = &s->next;
    tab.n_sites++;
    return s;
}

static bool slot_holds(const struct site_cache_slot *slot, uint64_t h, uint32_t api,
                       const uintptr_t *pcs, uint32_t depth)
{
    return slot->site && slot->hash == h && slot->api == api && slot->depth == depth &&
           !memcmp(slot->site->stack->pcs, pcs, depth * sizeof(uintptr_t));
}

struct site *sites_cached(const struct site_cache *cache, uint32_t api, const uintptr_t *pcs,
                          uint32_t depth)
{
    uint64_t h = hash_pcs(pcs, depth, api);
    const struct site_cache_slot *set = cache->set[h % SITE_CACHE_SETS];
    for (int w = 0; w < SITE_CACHE_WAYS; w++)
        if (slot_holds(&set[w], h, api, pcs, depth))
            return set[w].site;
    return NULL;
}

struct site *sites_lookup(struct site_cache *cache, uint32_t api, const uintptr_t *pcs,
                          uint32_t depth, bool truncated)
{
    struct site *s = sites_cached(cache, api, pcs, depth);
    if (s)
        return s;
    uint64_t h = hash_pcs(pcs, depth, api);
    pthread_mutex_lock(&table_lock);
    struct stack_rec *st = stack_intern(pcs, depth, truncated, h);
    s = st ? site_intern(api, st) : NULL;
    pthread_mutex_unlock(&table_lock);
    if (s) { /* the newest first; the oldest of the set leaves */
        struct site_cache_slot *set = cache->set[h % SITE_CACHE_SETS];
        memmove(&set[1], &set[0], (SITE_CACHE_WAYS - 1) * sizeof set[0]);
        set[0] = (struct site_cache_slot){.hash = h, .api = api, .depth = depth, .site = s};
    }
    return s;
}

/* The calling thread among the site's threads: the first free slot is claimed by CAS, nothing
 * waits (a load and a compare when it is the first one; past SITE_TIDS threads, nothing kept). */
static void site_thread(struct site *s, uint32_t tid)
{
    for (uint32_t i = 0; i < SITE_TIDS; i++) {
        uint32_t v = atomic_load_explicit(&s->tids[i], memory_order_relaxed);
        if (v == tid)
            return;
        if (v == 0) {
            if (atomic_compare_exchange_strong_explicit(&s->tids[i], &v, tid, memory_order_relaxed,
                                                        memory_order_relaxed) ||
                v == tid)
                return;
        }
    }
}

static uint32_t site_threads(const struct site *s)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < SITE_TIDS; i++)
        n += atomic_load_explicit(&s->tids[i], memory_order_relaxed) != 0;
    return n;
}

void site_add(struct site *s, uint64_t step, uint64_t blocked_ns, uint32_t tid)
{
    phase_add(&s->pc, step, blocked_ns);
    site_thread(s, tid);
    uint64_t m = atomic_load_explicit(&s->max_ns, memory_order_relaxed);
    while (blocked_ns > m &&
           !atomic_compare_exchange_weak_explicit(&s->max_ns, &m, blocked_ns, memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

void site_add_pinned(struct site *s)
{
    atomic_fetch_add_explicit(&s->pinned, 1, memory_order_relaxed);
}

void site_mark_compile_work(struct site *s)
{
    atomic_store_explicit(&s->compile_work, true, memory_order_relaxed);
}

bool site_compile_work(const struct site *s)
{
    return atomic_load_explicit(&s->compile_work, memory_order_relaxed);
}

uint32_t site_id(const struct site *s)
{
    return s->id;
}
uint32_t site_stack_id(const struct site *s)
{
    return s->stack->id;
}

uint64_t site_count(const struct site *s)
{
    return atomic_load_explicit(&s->pc.count, memory_order_relaxed);
}

void site_info(const struct site *s, struct site_info *out)
{
    *out = (struct site_info){.id = s->id,
                              .api = s->key.api,
                              .stack_id = s->stack->id,
                              .depth = s->stack->depth,
                              .truncated = s->stack->truncated,
                              .words = s->stack->pcs,
                              .phase = phase_raw(&s->pc),
                              .max_ns = atomic_load_explicit(&s->max_ns, memory_order_relaxed),
                              .threads = site_threads(s),
                              .pinned = atomic_load_explicit(&s->pinned, memory_order_relaxed)};
    out->count = out->phase.count;
    out->blocked_ns = out->phase.ns;
}

size_t sites_snapshot(struct site_info *out, size_t cap)
{
    size_t n = 0;
    pthread_mutex_lock(&table_lock);
    for (struct site *s = tab.list; s && n < cap; s = s->next)
        site_info(s, &out[n++]);
    pthread_mutex_unlock(&table_lock);
    return n;
}

bool sites_find(uint32_t id, struct site_info *out)
{
    bool found = false;
    pthread_mutex_lock(&table_lock);
    for (struct site *s = tab.list; s && !found; s = s->next)
        if (s->id == id) {
            site_info(s, out);
            found = true;
        }
    pthread_mutex_unlock(&table_lock);
    return found;
}

size_t sites_count(void)
{
    return tab.n_sites;
}
size_t stacks_count(void)
{
    return tab.n_stacks;
}

pthread_mutex_t *sites_table_lock(void)
{
    return &table_lock;
}

/* The child's one thread (the lock it held across fork() released): the parent's sites and
 * stacks are gone. */
void sites_atfork_child(void)
{
    arena_release(&table_arena);
    memset(&tab, 0, sizeof tab);
    tab.tail = &tab.list;
    table_oom = false;
}
