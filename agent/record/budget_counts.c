/* agent/record/budget_counts.c: the counts behind sync budgets (see budget_counts.h; the
 * syncspy_tally_* API that reads them is agent/process/api.c). budget_counts_add runs on the recording
 * path of a sync (its own thread, inside the CUDA call) while a region is open: no lock, no
 * allocation, only its own table written. */
#include "agent/record/budget_counts.h"

#include <stddef.h>

#include "common/compiler.h"

_Atomic uint64_t budget_counts_state;

bool budget_counts_reusable(const struct tally_table *t)
{
    uint64_t st = atomic_load_explicit(&budget_counts_state, memory_order_acquire);
    return !budget_counts_open(st) ||
           atomic_load_explicit(&t->epoch, memory_order_relaxed) != budget_counts_epoch(st);
}

/* ---- the owner's side: the recording path ---------------------------------------------------- */

/* Clears the table for epoch and publishes it (the owner's first sync of the epoch). */
static void table_renew(struct tally_table *t, uint64_t epoch)
{
    for (size_t i = 0; i < TALLY_SLOTS; i++) {
        atomic_store_explicit(&t->slot[i].site, 0, memory_order_relaxed);
        atomic_store_explicit(&t->slot[i].syncs, 0, memory_order_relaxed);
        atomic_store_explicit(&t->slot[i].ns, 0, memory_order_relaxed);
    }
    atomic_store_explicit(&t->other_syncs, 0, memory_order_relaxed);
    atomic_store_explicit(&t->other_ns, 0, memory_order_relaxed);
    atomic_store_explicit(&t->epoch, epoch, memory_order_release);
}

/* Only the owner writes: a relaxed load and store, no lock prefix. */
static inline void bump(_Atomic uint64_t *v, uint64_t by)
{
    atomic_store_explicit(v, atomic_load_explicit(v, memory_order_relaxed) + by,
                          memory_order_relaxed);
}

void budget_counts_add(struct tally_table *t, uint32_t site, uint64_t ns)
{
    uint64_t st = atomic_load_explicit(&budget_counts_state, memory_order_acquire);
    if (!budget_counts_open(st))
        return;
    if (atomic_load_explicit(&t->epoch, memory_order_relaxed) != budget_counts_epoch(st))
        table_renew(t, budget_counts_epoch(st));
    if (site) {
        /* open addressing from the site's hash, linear probing: a slot's site is set once */
        size_t h = (size_t)((site * 0x9E3779B1u) >> 26) % TALLY_SLOTS;
        for (size_t k = 0; k < TALLY_SLOTS; k++) {
            struct tally_slot *s = &t->slot[(h + k) % TALLY_SLOTS];
            uint32_t have = atomic_load_explicit(&s->site, memory_order_relaxed);
            if (have == site) {
                bump(&s->syncs, 1);
                bump(&s->ns, ns);
                return;
            }
            if (have == 0) {
                atomic_store_explicit(&s->syncs, 1, memory_order_relaxed);
                atomic_store_explicit(&s->ns, ns, memory_order_relaxed);
                atomic_store_explicit(&s->site, site, memory_order_release); /* after its counts */
                return;
            }
        }
    }
    bump(&t->other_syncs, 1);
    bump(&t->other_ns, ns);
}

void budget_counts_atfork_child(void)
{
    atomic_store(&budget_counts_state, 0);
}
